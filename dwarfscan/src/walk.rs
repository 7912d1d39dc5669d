//! The walk over one unit's DIEs: subprograms with their parameters, inlined subroutines
//! (with their parameters when instances are collected), nothing else; subtrees of no
//! interest are jumped over by their `DW_AT_sibling`.

use std::collections::HashMap;

use gimli::constants as dw;

use crate::dwarf::{Die, Units};
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
    /// An inline instance being collected (its parameters follow).
    Inline { owner: usize, inst: usize },
    /// Nothing of interest below.
    Skip,
}

/// Read every attribute of the DIE whose abbreviation was just read from `raw`.
fn read_die<'s>(
    raw: &mut gimli::EntriesRaw<'_, '_, crate::dwarf::R<'s>>,
    abbrev: &gimli::Abbreviation,
    off: u64,
    dwarf: &gimli::Dwarf<crate::dwarf::R<'s>>,
    unit: &crate::dwarf::Unit<'s>,
) -> Result<Die<'s>, gimli::Error> {
    let mut die = Die::new(abbrev.tag(), off, abbrev.has_children());
    for spec in abbrev.attributes() {
        let a = raw.read_attribute(*spec)?;
        die.apply(dwarf, unit, a);
    }
    Ok(die)
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
    let base = file.starts[index];
    let dwarf = &file.dwarf;

    let mut sps: Vec<Sp<'_>> = Vec::new();
    let mut sp_index: HashMap<u64, usize> = HashMap::new();
    let mut inlined: Vec<(u64, usize)> = Vec::new();
    let mut raw_instances: Vec<RawInstance<'_>> = Vec::new();
    let mut stack: Vec<Frame> = Vec::with_capacity(32);
    let mut raw = unit.entries_raw(None)?;
    // Real depth = depth_base + raw's depth (raw restarts at 0 after a sibling jump).
    let mut depth_base: isize = 0;
    let mut dies = 0u64;
    let unit_len = unit.header.length_including_self() as u64;
    while !raw.is_empty() {
        let depth = depth_base + raw.next_depth();
        let off = base + raw.next_offset().0 as u64;
        let Some(abbrev) = raw.read_abbreviation()? else {
            if depth_base + raw.next_depth() <= 0 {
                break;
            }
            continue;
        };
        dies += 1;
        stack.truncate(depth.max(0) as usize);
        let parent = stack.last().copied();
        let tag = abbrev.tag();
        let has_code = |a: &gimli::Abbreviation| {
            let specs = a.attributes();
            !specs.iter().any(|s| s.name() == dw::DW_AT_declaration)
                && specs
                    .iter()
                    .any(|s| s.name() == dw::DW_AT_low_pc || s.name() == dw::DW_AT_ranges)
        };
        let mut consumed = true;
        let is_orphan = |a: &gimli::Abbreviation| {
            !a.attributes().iter().any(|s| {
                matches!(
                    s.name(),
                    dw::DW_AT_declaration
                        | dw::DW_AT_inline
                        | dw::DW_AT_abstract_origin
                        | dw::DW_AT_specification
                )
            })
        };
        let frame = match (parent, tag) {
            (None, _) => {
                let die = read_die(&mut raw, abbrev, off, dwarf, &unit)?;
                if die.dwo {
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
                let die = read_die(&mut raw, abbrev, off, dwarf, &unit)?;
                let code = die.has_code();
                let i = sps.len();
                sp_index.insert(off, i);
                sps.push(Sp {
                    die,
                    params: Vec::new(),
                    variadic: false,
                    orphan: !code,
                });
                Frame::Sub {
                    sp: i,
                    owner: code.then_some(i),
                }
            }
            (Some(_), dw::DW_TAG_subprogram) => {
                // No code: read on demand when something refers to it.
                res.stats.skip(
                    if abbrev
                        .attributes()
                        .iter()
                        .any(|s| s.name() == dw::DW_AT_declaration)
                    {
                        SkipReason::Declaration
                    } else {
                        SkipReason::NoCode
                    },
                );
                consumed = false;
                Frame::Skip
            }
            (Some(Frame::Sub { sp, .. }), dw::DW_TAG_formal_parameter) => {
                let die = read_die(&mut raw, abbrev, off, dwarf, &unit)?;
                sps[sp].params.push(die);
                Frame::Skip
            }
            (Some(Frame::Sub { sp, .. }), dw::DW_TAG_unspecified_parameters) => {
                raw.skip_attributes(abbrev.attributes())?;
                sps[sp].variadic = true;
                Frame::Skip
            }
            (Some(Frame::Inline { inst, .. }), dw::DW_TAG_formal_parameter) => {
                let die = read_die(&mut raw, abbrev, off, dwarf, &unit)?;
                raw_instances[inst].params.push(die);
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
            ) if ctx.instances => {
                res.stats.inlined_instances += 1;
                let die = read_die(&mut raw, abbrev, off, dwarf, &unit)?;
                let parent = match parent {
                    Some(Frame::Body { inst, .. }) => inst,
                    _ => None,
                };
                if let Some(o) = die.origin {
                    inlined.push((o, owner));
                }
                raw_instances.push(RawInstance {
                    die,
                    owner,
                    parent,
                    params: Vec::new(),
                });
                Frame::Inline {
                    owner,
                    inst: raw_instances.len() - 1,
                }
            }
            (
                Some(Frame::Sub { owner, .. } | Frame::Body { owner, .. }),
                dw::DW_TAG_inlined_subroutine,
            ) => {
                res.stats.inlined_instances += 1;
                let specs = abbrev.attributes();
                let mut origin = None;
                for (i, spec) in specs.iter().enumerate() {
                    if spec.name() == dw::DW_AT_abstract_origin {
                        let a = raw.read_attribute(*spec)?;
                        origin = match a.value() {
                            gimli::AttributeValue::UnitRef(o) => Some(base + o.0 as u64),
                            gimli::AttributeValue::DebugInfoRef(o) => Some(o.0 as u64),
                            _ => None,
                        };
                    } else {
                        raw.skip_attributes(&specs[i..i + 1])?;
                    }
                }
                if let (Some(o), Some(owner)) = (origin, owner) {
                    inlined.push((o, owner));
                }
                Frame::Body { owner, inst: None }
            }
            (Some(Frame::Inline { owner, inst }), dw::DW_TAG_inlined_subroutine) => {
                // Only reached with instances on: an inline inside an inline.
                res.stats.inlined_instances += 1;
                let die = read_die(&mut raw, abbrev, off, dwarf, &unit)?;
                if let Some(o) = die.origin {
                    inlined.push((o, owner));
                }
                raw_instances.push(RawInstance {
                    die,
                    owner,
                    parent: Some(inst),
                    params: Vec::new(),
                });
                Frame::Inline {
                    owner,
                    inst: raw_instances.len() - 1,
                }
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
            _ => {
                consumed = false;
                Frame::Skip
            }
        };
        if !consumed && abbrev.has_children() {
            // Jump over the whole subtree when the DIE says where its sibling is.
            let specs = abbrev.attributes();
            let mut sibling = None;
            for (i, spec) in specs.iter().enumerate() {
                if spec.name() == dw::DW_AT_sibling {
                    if let gimli::AttributeValue::UnitRef(o) = raw.read_attribute(*spec)?.value() {
                        sibling = Some(o);
                    }
                } else {
                    raw.skip_attributes(&specs[i..i + 1])?;
                }
            }
            match sibling {
                Some(sib) if (sib.0 as u64) + base > off && (sib.0 as u64) < unit_len => {
                    raw = unit.entries_raw(Some(sib))?;
                    depth_base = depth;
                    continue;
                }
                _ => {}
            }
            stack.push(frame);
            continue;
        } else if !consumed {
            raw.skip_attributes(abbrev.attributes())?;
        }
        if abbrev.has_children() {
            stack.push(frame);
        }
    }
    res.stats.dies = dies;
    res.stats.units = 1;

    let mut b = Builder {
        ctx,
        units: Units::new(file, index, &unit),
        sps,
        sp_index,
        types: TypeGraph::default(),
        files: HashMap::new(),
        res,
    };
    b.assemble(&inlined, &raw_instances);
    let Builder { mut res, types, .. } = b;
    res.stats.bad_type_refs += types.bad_refs;
    res.types = types.types;
    Ok(res)
}
