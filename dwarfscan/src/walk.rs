//! The walk over one unit's DIEs: subprograms with their parameters, inlined subroutines
//! (where they are and what they are copies of: those recorded as instances are read
//! again later), nothing else; subtrees of no interest are jumped over by their
//! `DW_AT_sibling`.

use rustc_hash::FxHashMap as HashMap;

use gimli::constants as dw;

use crate::dwarf::{read_one, sibling, Die, Units, R};
use crate::inlines::RawInstance;
use crate::stats::SkipReason;
use crate::types::TypeGraph;
use crate::units::{Builder, CuResult, FileCtx, Sp, UnitError};

#[derive(Clone, Copy)]
enum Frame {
    /// CU or namespace: subprograms may follow.
    Scope,
    /// A subprogram (arena index) and the function with code it belongs to.
    Sub { sp: usize, owner: Option<usize> },
    /// A lexical block or inlined subroutine inside a function with code, and the
    /// innermost inline instance (index into the raw instances) around it.
    Body {
        owner: Option<usize>,
        inst: Option<usize>,
    },
    /// An inline instance being collected (what is nested in it hangs from it).
    Inline { owner: usize, inst: usize },
    /// Nothing of interest below.
    Skip,
}

/// Read every attribute of the DIE whose abbreviation was just read from `raw`.
fn read_die<'s>(
    raw: &mut Raw<'_, 's>,
    abbrev: &gimli::Abbreviation,
    off: u64,
    dwarf: &gimli::Dwarf<R<'s>>,
    unit: &crate::dwarf::Unit<'s>,
) -> Result<Die<'s>, gimli::Error> {
    let mut die = Die::new(abbrev.tag(), off, abbrev.has_children());
    for spec in abbrev.attributes() {
        let a = raw.read_attribute(*spec)?;
        die.apply(dwarf, unit, a);
    }
    Ok(die)
}

type Raw<'r, 's> = gimli::EntriesRaw<'r, 'r, R<'s>>;

/// What the walk collects from one unit.
struct Walk<'s> {
    /// Subprograms with code (and orphan definitions), with their parameters.
    sps: Vec<Sp<'s>>,
    /// `.debug_info` offset of a subprogram → index into `sps`.
    sp_index: HashMap<u64, usize>,
    /// Inline edges: abstract origin offset → the subprogram with code holding the copy.
    inlined: Vec<(u64, usize)>,
    /// Inline instances with their parameters (when `ctx.instances`).
    raw_instances: Vec<RawInstance>,
    /// Offsets of function declarations (user space: prototypes of what the unit calls).
    decls: Vec<u64>,
    /// Whether declarations are collected.
    want_decls: bool,
    res: CuResult,
}

/// The unit being walked.
struct UnitCx<'u, 's> {
    dwarf: &'u gimli::Dwarf<R<'s>>,
    unit: &'u crate::dwarf::Unit<'s>,
    /// Global offset of the unit.
    base: u64,
    /// Whether inline instances are collected.
    instances: bool,
}

/// Scan unit `index` of `ctx`.
pub fn scan_unit(ctx: &FileCtx<'_, '_>, index: usize) -> Result<CuResult, UnitError> {
    let file = ctx.dwarf;
    let header = file.headers[index];
    let mut res = CuResult::default();
    match header.type_() {
        gimli::UnitType::Compilation => {}
        gimli::UnitType::Skeleton(_) | gimli::UnitType::SplitCompilation(_) => {
            return Err(UnitError::SplitDwarf("split-DWARF skeleton unit".into()))
        }
        _ => {
            res.stats.units_skipped += 1;
            return Ok(res);
        }
    }
    let unit = file.dwarf.unit(header)?;
    // An assembly unit names functions without their types.
    let asm_unit = {
        let mut e = unit.entries();
        matches!(
            e.next_dfs()?
                .map(|(_, d)| d.attr_value(gimli::DW_AT_language)),
            Some(Ok(Some(gimli::AttributeValue::Language(
                gimli::DW_LANG_Mips_Assembler
            ))))
        )
    };
    let cx = UnitCx {
        dwarf: &file.dwarf,
        unit: &unit,
        base: file.starts[index],
        instances: ctx.instances.any(),
    };
    let mut walk = Walk {
        sps: Vec::new(),
        sp_index: HashMap::default(),
        inlined: Vec::new(),
        raw_instances: Vec::new(),
        decls: Vec::new(),
        want_decls: !ctx.kind.is_kernel() && !ctx.kind.is_relocatable() && !asm_unit,
        res,
    };
    walk.run(&cx)?;
    let Walk {
        sps,
        sp_index,
        inlined,
        raw_instances,
        decls,
        res,
        ..
    } = walk;

    let mut b = Builder {
        ctx,
        units: Units::new(file, index, &unit),
        sps,
        sp_index,
        types: TypeGraph::default(),
        files: HashMap::default(),
        res,
        line_rows: None,
        asm_unit,
    };
    b.assemble(&inlined, &raw_instances);
    b.declarations(&decls);
    let known = ctx.known_structs.map(|k| match ctx.first_unit {
        Some(first) => k.before(first, index as u64),
        None => k.all(),
    });
    b.types.fill_members(&mut b.units, known);
    let Builder { mut res, types, .. } = b;
    res.stats.bad_type_refs += types.bad_refs;
    res.stats.members_dropped += types.members_dropped;
    res.types = types.types;
    Ok(res)
}

impl<'s> Walk<'s> {
    /// Every DIE of the unit, in order, keeping a stack of what each depth is inside.
    fn run(&mut self, cx: &UnitCx<'_, 's>) -> Result<(), UnitError> {
        let unit = cx.unit;
        let mut stack: Vec<Frame> = Vec::with_capacity(32);
        let mut raw = unit.entries_raw(None)?;
        // Real depth = depth_base + raw's depth (raw restarts at 0 after a sibling jump).
        let mut depth_base: isize = 0;
        let mut dies = 0u64;
        let unit_len = unit.header.length_including_self() as u64;
        while !raw.is_empty() {
            let depth = depth_base + raw.next_depth();
            let off = cx.base + raw.next_offset().0 as u64;
            let Some(abbrev) = raw.read_abbreviation()? else {
                if depth_base + raw.next_depth() <= 0 {
                    break;
                }
                continue;
            };
            dies += 1;
            stack.truncate(depth.max(0) as usize);
            let parent = stack.last().copied();
            match self.die(cx, &mut raw, abbrev, off, parent)? {
                Some(frame) => {
                    if abbrev.has_children() {
                        stack.push(frame);
                    }
                }
                None if abbrev.has_children() => {
                    // Jump over the whole subtree when the DIE says where its sibling is.
                    match sibling(&mut raw, abbrev)? {
                        Some(sib)
                            if (sib.0 as u64) + cx.base > off && (sib.0 as u64) < unit_len =>
                        {
                            raw = unit.entries_raw(Some(sib))?;
                            depth_base = depth;
                        }
                        _ => stack.push(Frame::Skip),
                    }
                }
                None => raw.skip_attributes(abbrev.attributes())?,
            }
        }
        self.res.stats.dies = dies;
        self.res.stats.units = 1;
        Ok(())
    }

    /// One DIE under `parent`: its frame once its attributes are read or skipped, or None
    /// when it is of no interest and its attributes are still to be skipped.
    fn die(
        &mut self,
        cx: &UnitCx<'_, 's>,
        raw: &mut Raw<'_, 's>,
        abbrev: &gimli::Abbreviation,
        off: u64,
        parent: Option<Frame>,
    ) -> Result<Option<Frame>, UnitError> {
        let read = |raw: &mut Raw<'_, 's>| read_die(raw, abbrev, off, cx.dwarf, cx.unit);
        let frame = match (parent, abbrev.tag()) {
            (None, _) => {
                if read(raw)?.dwo {
                    return Err(UnitError::SplitDwarf(
                        "references a split-DWARF .dwo file".into(),
                    ));
                }
                Frame::Scope
            }
            (Some(Frame::Skip), _) => {
                raw.skip_attributes(abbrev.attributes())?;
                Frame::Skip
            }
            (Some(_), dw::DW_TAG_subprogram) if has_code(abbrev) || is_orphan(abbrev) => {
                let die = read(raw)?;
                let code = die.has_code();
                let i = self.sps.len();
                self.sp_index.insert(off, i);
                self.sps.push(Sp {
                    die,
                    params: Vec::new(),
                    variadic: false,
                    orphan: !code,
                    params_read: true,
                });
                Frame::Sub {
                    sp: i,
                    owner: code.then_some(i),
                }
            }
            (Some(_), dw::DW_TAG_subprogram) => {
                // No code: read on demand when something refers to it.
                let declaration = has_attr(abbrev, dw::DW_AT_declaration);
                if declaration && self.want_decls && has_attr(abbrev, dw::DW_AT_external) {
                    self.decls.push(off);
                }
                self.res.stats.skip(if declaration {
                    SkipReason::Declaration
                } else {
                    SkipReason::NoCode
                });
                return Ok(None);
            }
            (Some(Frame::Sub { sp, .. }), dw::DW_TAG_formal_parameter) => {
                let die = read(raw)?;
                self.sps[sp].params.push(die);
                Frame::Skip
            }
            (Some(Frame::Sub { sp, .. }), dw::DW_TAG_unspecified_parameters) => {
                raw.skip_attributes(abbrev.attributes())?;
                self.sps[sp].variadic = true;
                Frame::Skip
            }
            (
                Some(
                    Frame::Sub {
                        owner: Some(owner), ..
                    }
                    | Frame::Body {
                        owner: Some(owner), ..
                    },
                ),
                dw::DW_TAG_inlined_subroutine,
            ) if cx.instances => {
                let enclosing = match parent {
                    Some(Frame::Body { inst, .. }) => inst,
                    _ => None,
                };
                self.instance(
                    abstract_origin(raw, abbrev, cx.base)?,
                    off,
                    owner,
                    enclosing,
                )
            }
            (
                Some(Frame::Sub { owner, .. } | Frame::Body { owner, .. }),
                dw::DW_TAG_inlined_subroutine,
            ) => {
                self.res.stats.inlined_instances += 1;
                let origin = abstract_origin(raw, abbrev, cx.base)?;
                if let (Some(o), Some(owner)) = (origin, owner) {
                    self.inlined.push((o, owner));
                }
                Frame::Body { owner, inst: None }
            }
            (Some(Frame::Inline { owner, inst }), dw::DW_TAG_inlined_subroutine) => {
                // Only reached with instances on: an inline inside an inline.
                let origin = abstract_origin(raw, abbrev, cx.base)?;
                self.instance(origin, off, owner, Some(inst))
            }
            (Some(Frame::Sub { owner, .. }), dw::DW_TAG_lexical_block) => {
                raw.skip_attributes(abbrev.attributes())?;
                Frame::Body { owner, inst: None }
            }
            (Some(Frame::Body { owner, inst }), dw::DW_TAG_lexical_block) => {
                raw.skip_attributes(abbrev.attributes())?;
                Frame::Body { owner, inst }
            }
            (Some(Frame::Inline { owner, inst }), dw::DW_TAG_lexical_block) => {
                raw.skip_attributes(abbrev.attributes())?;
                Frame::Body {
                    owner: Some(owner),
                    inst: Some(inst),
                }
            }
            (Some(Frame::Scope), dw::DW_TAG_namespace) => {
                raw.skip_attributes(abbrev.attributes())?;
                Frame::Scope
            }
            _ => return Ok(None),
        };
        Ok(Some(frame))
    }

    /// An inline instance at `off`, a copy of the subprogram at `origin` (its attributes
    /// and parameters are read if it is recorded, `Builder::assemble_instances`).
    fn instance(
        &mut self,
        origin: Option<u64>,
        off: u64,
        owner: usize,
        parent: Option<usize>,
    ) -> Frame {
        self.res.stats.inlined_instances += 1;
        if let Some(o) = origin {
            self.inlined.push((o, owner));
        }
        self.raw_instances.push(RawInstance {
            off,
            origin,
            owner,
            parent,
        });
        Frame::Inline {
            owner,
            inst: self.raw_instances.len() - 1,
        }
    }
}

fn has_attr(a: &gimli::Abbreviation, name: gimli::DwAt) -> bool {
    a.attributes().iter().any(|s| s.name() == name)
}

/// A subprogram DIE with code: low_pc or ranges, and not a declaration.
fn has_code(a: &gimli::Abbreviation) -> bool {
    !has_attr(a, dw::DW_AT_declaration)
        && (has_attr(a, dw::DW_AT_low_pc) || has_attr(a, dw::DW_AT_ranges))
}

/// A definition without code that is neither a declaration, nor inline, nor a reference
/// to another DIE (see `Sp::orphan`).
fn is_orphan(a: &gimli::Abbreviation) -> bool {
    !a.attributes().iter().any(|s| {
        matches!(
            s.name(),
            dw::DW_AT_declaration
                | dw::DW_AT_inline
                | dw::DW_AT_abstract_origin
                | dw::DW_AT_specification
        )
    })
}

/// Read the DIE's attributes for its `DW_AT_abstract_origin` (global offset).
fn abstract_origin(
    raw: &mut Raw<'_, '_>,
    abbrev: &gimli::Abbreviation,
    base: u64,
) -> Result<Option<u64>, gimli::Error> {
    Ok(match read_one(raw, abbrev, dw::DW_AT_abstract_origin)? {
        Some(gimli::AttributeValue::UnitRef(o)) => Some(base + o.0 as u64),
        Some(gimli::AttributeValue::DebugInfoRef(o)) => Some(o.0 as u64),
        _ => None,
    })
}
