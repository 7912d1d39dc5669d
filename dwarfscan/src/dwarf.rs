//! The DWARF side shared by all compilation units of a file: the `gimli::Dwarf`, the unit
//! directory (for `DW_FORM_ref_addr` references into other units) and the attributes
//! dwarfscan reads from a DIE.

use rustc_hash::FxHashMap as HashMap;

use gimli::{constants as dw, AttributeValue};

use crate::elf::ElfInfo;

/// The reader type: a little-endian slice of (mapped, decompressed or relocated) data.
pub type R<'s> = gimli::EndianSlice<'s, gimli::LittleEndian>;
/// A parsed unit.
pub type Unit<'s> = gimli::Unit<R<'s>>;

/// How much of a mapped `.debug_info` the header walk reads before returning its pages.
const RELEASE_STEP: usize = 4 << 20;

/// The DWARF of one file, ready to be walked unit by unit in parallel.
pub struct FileDwarf<'s> {
    /// gimli's view of the sections.
    pub dwarf: gimli::Dwarf<R<'s>>,
    /// Unit headers in section order.
    pub headers: Vec<gimli::UnitHeader<R<'s>>>,
    /// Start offsets of the units in `.debug_info` (sorted), for cross-unit references.
    pub starts: Vec<u64>,
}

impl<'s> FileDwarf<'s> {
    /// Load the sections of `elf` and list the units. When `mapped` (the sections are a
    /// file mapping), the pages of `.debug_info` the walk over the headers touched are
    /// returned to the kernel as it goes: the page cache may hold the file in large
    /// folios, each mapped whole on a fault, which would put all of `.debug_info` in the
    /// resident set before a unit is scanned.
    pub fn new(elf: &'s ElfInfo<'_>, mapped: bool) -> Result<FileDwarf<'s>, gimli::Error> {
        let dwarf = gimli::Dwarf::load(|id| -> Result<R<'s>, gimli::Error> {
            Ok(gimli::EndianSlice::new(
                elf.section(id),
                gimli::LittleEndian,
            ))
        })?;
        let info = elf.section(gimli::SectionId::DebugInfo);
        let mut released = 0usize;
        let mut headers = Vec::new();
        let mut iter = dwarf.units();
        while let Some(h) = iter.next()? {
            let at = h.offset().as_debug_info_offset().map_or(0, |o| o.0);
            if mapped && at >= released + RELEASE_STEP {
                crate::release_pages(info.get(released..at).unwrap_or_default());
                released = at;
            }
            headers.push(h);
        }
        if mapped {
            crate::release_pages(info.get(released..).unwrap_or_default());
        }
        let starts = headers
            .iter()
            .map(|h| h.offset().as_debug_info_offset().map_or(0, |o| o.0 as u64))
            .collect();
        Ok(FileDwarf {
            dwarf,
            headers,
            starts,
        })
    }

    /// Index of the unit that contains `.debug_info` offset `off`.
    pub fn unit_index_of(&self, off: u64) -> Option<usize> {
        let i = self.starts.partition_point(|&s| s <= off).checked_sub(1)?;
        let h = &self.headers[i];
        let end = self.starts[i] + h.length_including_self() as u64;
        (off < end).then_some(i)
    }
}

/// The current unit plus lazily parsed other units (targets of `DW_FORM_ref_addr`).
pub struct Units<'a, 's> {
    /// The file.
    pub file: &'a FileDwarf<'s>,
    /// Index of the unit being scanned.
    pub cur_index: usize,
    /// The unit being scanned.
    pub cur: &'a Unit<'s>,
    foreign: HashMap<usize, Box<Unit<'s>>>,
}

impl<'a, 's> Units<'a, 's> {
    /// Units seen from `cur`.
    pub fn new(file: &'a FileDwarf<'s>, cur_index: usize, cur: &'a Unit<'s>) -> Self {
        Units {
            file,
            cur_index,
            cur,
            foreign: HashMap::default(),
        }
    }

    /// Global `.debug_info` offset of the current unit's start.
    pub fn cur_base(&self) -> u64 {
        self.file.starts[self.cur_index]
    }

    /// The unit holding global offset `off`, and the offset inside it.
    pub fn locate(&mut self, off: u64) -> Result<(&Unit<'s>, gimli::UnitOffset), gimli::Error> {
        let base = self.cur_base();
        let cur_end = base + self.cur.header.length_including_self() as u64;
        if off >= base && off < cur_end {
            return Ok((self.cur, gimli::UnitOffset((off - base) as usize)));
        }
        let idx = self
            .file
            .unit_index_of(off)
            .ok_or(gimli::Error::NoEntryAtGivenOffset)?;
        if !self.foreign.contains_key(&idx) {
            let unit = self.file.dwarf.unit(self.file.headers[idx])?;
            self.foreign.insert(idx, Box::new(unit));
        }
        let unit = &self.foreign[&idx];
        Ok((
            unit,
            gimli::UnitOffset((off - self.file.starts[idx]) as usize),
        ))
    }
}

/// How a function's code is described.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HighPc {
    /// No `DW_AT_high_pc`.
    #[default]
    None,
    /// An absolute end address.
    Addr(u64),
    /// A size (offset from `low_pc`).
    Size(u64),
}

/// The attributes dwarfscan reads from one DIE.
#[derive(Clone, Debug)]
pub struct Die<'s> {
    /// Tag.
    pub tag: gimli::DwTag,
    /// Global `.debug_info` offset.
    pub off: u64,
    /// Whether children follow.
    pub has_children: bool,
    /// `DW_AT_name`.
    pub name: Option<&'s [u8]>,
    /// `DW_AT_linkage_name`.
    pub linkage_name: Option<&'s [u8]>,
    /// `DW_AT_type` (global offset).
    pub ty: Option<u64>,
    /// `DW_AT_abstract_origin` (global offset).
    pub origin: Option<u64>,
    /// `DW_AT_specification` (global offset).
    pub spec: Option<u64>,
    /// `DW_AT_sibling` (global offset).
    pub sibling: Option<u64>,
    /// `DW_AT_byte_size`.
    pub byte_size: Option<u64>,
    /// `DW_AT_encoding`.
    pub encoding: Option<u8>,
    /// `DW_AT_count` or `DW_AT_upper_bound` + 1.
    pub count: Option<u64>,
    /// `DW_AT_data_member_location` as a constant (members).
    pub member_offset: Option<u64>,
    /// `DW_AT_bit_size` or `DW_AT_data_bit_offset` present (a bit-field member).
    pub bitfield: bool,
    /// `DW_AT_bit_size` (a bit-field's width).
    pub bit_size: Option<u64>,
    /// `DW_AT_data_bit_offset` (DWARF 4+: a bit-field's first bit from the struct's start).
    pub data_bit_offset: Option<u64>,
    /// `DW_AT_bit_offset` (DWARF 2/3: bits from the most significant bit of the storage
    /// unit of `DW_AT_byte_size` bytes at `DW_AT_data_member_location`).
    pub bit_offset_msb: Option<u64>,
    /// `DW_AT_const_value`, as (value, came signed).
    pub const_value: Option<(i64, bool)>,
    /// `DW_AT_declaration`.
    pub declaration: bool,
    /// `DW_AT_external`.
    pub external: bool,
    /// `DW_AT_artificial`.
    pub artificial: bool,
    /// `DW_AT_prototyped`.
    pub prototyped: bool,
    /// `DW_AT_inline`.
    pub inline: Option<u8>,
    /// `DW_AT_calling_convention`.
    pub cc: Option<u8>,
    /// `DW_AT_low_pc`.
    pub low_pc: Option<u64>,
    /// `DW_AT_high_pc`.
    pub high_pc: HighPc,
    /// `DW_AT_entry_pc` of address class.
    pub entry_pc: Option<u64>,
    /// `DW_AT_entry_pc` of constant class: an offset from the DIE's base address.
    pub entry_pc_offset: Option<u64>,
    /// `DW_AT_call_file` (inlined subroutines).
    pub call_file: Option<u64>,
    /// `DW_AT_call_line` (inlined subroutines).
    pub call_line: Option<u64>,
    /// `DW_AT_ranges`.
    pub ranges: Option<gimli::RangeListsOffset>,
    /// `DW_AT_decl_file`.
    pub decl_file: Option<u64>,
    /// `DW_AT_decl_line`.
    pub decl_line: Option<u64>,
    /// What `DW_AT_frame_base` is.
    pub frame_base: Option<FrameBase>,
    /// `DW_AT_location`.
    pub location: Option<AttributeValue<R<'s>>>,
    /// `DW_AT_dwo_name` / `DW_AT_GNU_dwo_name` present.
    pub dwo: bool,
}

/// What a subprogram's `DW_AT_frame_base` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameBase {
    /// `DW_OP_call_frame_cfa` (gcc).
    Cfa,
    /// `DW_OP_reg6`: rbp, which is CFA - 16 once the prologue has set it up (clang).
    Rbp,
    /// Anything else.
    Other,
}

fn global_ref(unit: &Unit<'_>, v: &AttributeValue<R<'_>>) -> Option<u64> {
    match *v {
        AttributeValue::UnitRef(o) => o.to_debug_info_offset(&unit.header).map(|d| d.0 as u64),
        AttributeValue::DebugInfoRef(o) => Some(o.0 as u64),
        _ => None,
    }
}

impl<'s> Die<'s> {
    /// An empty DIE record for `tag` at `off`.
    pub fn new(tag: gimli::DwTag, off: u64, has_children: bool) -> Die<'s> {
        Die {
            tag,
            off,
            has_children,
            name: None,
            linkage_name: None,
            ty: None,
            origin: None,
            spec: None,
            sibling: None,
            byte_size: None,
            encoding: None,
            count: None,
            member_offset: None,
            bitfield: false,
            bit_size: None,
            data_bit_offset: None,
            bit_offset_msb: None,
            const_value: None,
            declaration: false,
            external: false,
            artificial: false,
            prototyped: false,
            inline: None,
            cc: None,
            low_pc: None,
            high_pc: HighPc::None,
            entry_pc: None,
            entry_pc_offset: None,
            call_file: None,
            call_line: None,
            ranges: None,
            decl_file: None,
            decl_line: None,
            frame_base: None,
            location: None,
            dwo: false,
        }
    }

    /// Record one attribute. Values of unexpected forms are ignored.
    pub fn apply(
        &mut self,
        dwarf: &gimli::Dwarf<R<'s>>,
        unit: &Unit<'s>,
        attr: gimli::Attribute<R<'s>>,
    ) {
        let string = |v| dwarf.attr_string(unit, v).ok().map(|r: R<'s>| r.slice());
        let flag = |v: &AttributeValue<R<'s>>| matches!(v, AttributeValue::Flag(true));
        let value = attr.value();
        match attr.name() {
            dw::DW_AT_name => self.name = string(value),
            dw::DW_AT_linkage_name | dw::DW_AT_MIPS_linkage_name => {
                self.linkage_name = string(value)
            }
            dw::DW_AT_type => self.ty = global_ref(unit, &value),
            dw::DW_AT_abstract_origin => self.origin = global_ref(unit, &value),
            dw::DW_AT_specification => self.spec = global_ref(unit, &value),
            dw::DW_AT_sibling => self.sibling = global_ref(unit, &value),
            dw::DW_AT_byte_size => self.byte_size = value.udata_value(),
            dw::DW_AT_encoding => {
                if let AttributeValue::Encoding(e) = value {
                    self.encoding = Some(e.0);
                }
            }
            dw::DW_AT_count => self.count = value.udata_value(),
            dw::DW_AT_data_member_location => self.member_offset = value.udata_value(),
            dw::DW_AT_bit_size => {
                self.bitfield = true;
                self.bit_size = value.udata_value();
            }
            dw::DW_AT_data_bit_offset => {
                self.bitfield = true;
                self.data_bit_offset = value.udata_value();
            }
            dw::DW_AT_bit_offset => self.bit_offset_msb = value.udata_value(),
            dw::DW_AT_upper_bound => {
                // An upper bound of -1 (sdata, or all-ones data8) means "unknown";
                // data1 255 is a real bound (GCC: `u32 [256]`).
                let n = match value {
                    AttributeValue::Sdata(v) if v >= 0 => Some(v as u64),
                    AttributeValue::Data1(v) => Some(u64::from(v)),
                    AttributeValue::Data2(v) => Some(u64::from(v)),
                    AttributeValue::Data4(v) if v != u32::MAX => Some(u64::from(v)),
                    AttributeValue::Data8(v) if v != u64::MAX => Some(v),
                    AttributeValue::Udata(v) => Some(v),
                    _ => None,
                };
                self.count = n.and_then(|n| n.checked_add(1));
            }
            dw::DW_AT_const_value => {
                self.const_value = match value {
                    AttributeValue::Sdata(v) => Some((v, true)),
                    AttributeValue::Udata(v) => Some((v as i64, false)),
                    AttributeValue::Data1(v) => Some((i64::from(v), false)),
                    AttributeValue::Data2(v) => Some((i64::from(v), false)),
                    AttributeValue::Data4(v) => Some((i64::from(v), false)),
                    AttributeValue::Data8(v) => Some((v as i64, false)),
                    _ => None,
                }
            }
            dw::DW_AT_declaration => self.declaration = flag(&value),
            dw::DW_AT_external => self.external = flag(&value),
            dw::DW_AT_artificial => self.artificial = flag(&value),
            dw::DW_AT_prototyped => self.prototyped = flag(&value),
            dw::DW_AT_inline => {
                if let AttributeValue::Inline(i) = value {
                    self.inline = Some(i.0);
                }
            }
            dw::DW_AT_calling_convention => {
                if let AttributeValue::CallingConvention(c) = value {
                    self.cc = Some(c.0);
                }
            }
            dw::DW_AT_low_pc => self.low_pc = dwarf.attr_address(unit, value).ok().flatten(),
            dw::DW_AT_entry_pc => match dwarf.attr_address(unit, value).ok().flatten() {
                Some(a) => self.entry_pc = Some(a),
                None => self.entry_pc_offset = value.udata_value(),
            },
            dw::DW_AT_call_file => {
                self.call_file = match value {
                    AttributeValue::FileIndex(i) => Some(i),
                    v => v.udata_value(),
                }
            }
            dw::DW_AT_call_line => self.call_line = value.udata_value(),
            dw::DW_AT_high_pc => {
                self.high_pc = match dwarf.attr_address(unit, value).ok().flatten() {
                    Some(a) => HighPc::Addr(a),
                    None => value.udata_value().map_or(HighPc::None, HighPc::Size),
                }
            }
            dw::DW_AT_ranges => self.ranges = dwarf.attr_ranges_offset(unit, value).ok().flatten(),
            dw::DW_AT_decl_file => {
                self.decl_file = match value {
                    AttributeValue::FileIndex(i) => Some(i),
                    v => v.udata_value(),
                }
            }
            dw::DW_AT_decl_line => self.decl_line = value.udata_value(),
            dw::DW_AT_frame_base => {
                self.frame_base = Some(match value {
                    AttributeValue::Exprloc(ref e)
                        if e.0.slice() == [dw::DW_OP_call_frame_cfa.0] =>
                    {
                        FrameBase::Cfa
                    }
                    AttributeValue::Exprloc(ref e) if e.0.slice() == [dw::DW_OP_reg6.0] => {
                        FrameBase::Rbp
                    }
                    _ => FrameBase::Other,
                })
            }
            dw::DW_AT_location => self.location = Some(value),
            dw::DW_AT_dwo_name | dw::DW_AT_GNU_dwo_name => self.dwo = true,
            _ => {}
        }
    }

    /// Read the DIE at `uoff` of `unit` (all attributes).
    pub fn read(
        dwarf: &gimli::Dwarf<R<'s>>,
        unit: &Unit<'s>,
        uoff: gimli::UnitOffset,
    ) -> Result<Die<'s>, gimli::Error> {
        let entry = unit.entry(uoff)?;
        let off = uoff
            .to_debug_info_offset(&unit.header)
            .map_or(0, |o| o.0 as u64);
        let mut die = Die::new(entry.tag(), off, entry.has_children());
        let mut attrs = entry.attrs();
        while let Some(a) = attrs.next()? {
            die.apply(dwarf, unit, a);
        }
        Ok(die)
    }

    /// Whether the DIE has code of its own.
    pub fn has_code(&self) -> bool {
        self.low_pc.is_some() && self.high_pc != HighPc::None || self.ranges.is_some()
    }
}

/// Read the DIE at `off` (global offset) and those of its direct children whose tag
/// `keep` accepts; the subtrees of the others are jumped over where they give their
/// `DW_AT_sibling`.
pub fn read_with_children<'s>(
    units: &mut Units<'_, 's>,
    off: u64,
    keep: impl Fn(gimli::DwTag) -> bool,
) -> Result<(Die<'s>, Vec<Die<'s>>), gimli::Error> {
    read_at(units, off, Some(&keep))
}

/// Read the DIE at `off` (global offset) alone.
pub fn read_die<'s>(units: &mut Units<'_, 's>, off: u64) -> Result<Die<'s>, gimli::Error> {
    Ok(read_at(units, off, None)?.0)
}

/// The DIE at `off` and, with `keep`, its children it accepts.
#[allow(clippy::type_complexity)]
fn read_at<'s>(
    units: &mut Units<'_, 's>,
    off: u64,
    keep: Option<&dyn Fn(gimli::DwTag) -> bool>,
) -> Result<(Die<'s>, Vec<Die<'s>>), gimli::Error> {
    let dwarf = &units.file.dwarf;
    let (unit, uoff) = units.locate(off)?;
    let base = off - uoff.0 as u64;
    let unit_len = unit.header.length_including_self() as u64;
    let mut raw = unit.entries_raw(Some(uoff))?;
    let Some(abbrev) = raw.read_abbreviation()? else {
        return Err(gimli::Error::NoEntryAtGivenOffset);
    };
    let mut die = Die::new(abbrev.tag(), off, abbrev.has_children());
    for spec in abbrev.attributes() {
        let a = raw.read_attribute(*spec)?;
        die.apply(dwarf, unit, a);
    }
    let mut children = Vec::new();
    let keep = match keep {
        Some(keep) if die.has_children => keep,
        _ => return Ok((die, children)),
    };
    // Real depth = depth_base + raw's depth (raw restarts at 0 after a sibling jump).
    let mut depth_base: isize = 0;
    while !raw.is_empty() {
        let depth = depth_base + raw.next_depth();
        let uoff = raw.next_offset();
        let coff = base + uoff.0 as u64;
        let Some(abbrev) = raw.read_abbreviation()? else {
            if depth_base + raw.next_depth() <= 0 {
                break;
            }
            continue;
        };
        if depth == 1 && keep(abbrev.tag()) {
            let mut c = Die::new(abbrev.tag(), coff, abbrev.has_children());
            for spec in abbrev.attributes() {
                let a = raw.read_attribute(*spec)?;
                c.apply(dwarf, unit, a);
            }
            children.push(c);
        } else if depth == 1 && abbrev.has_children() {
            match sibling(&mut raw, abbrev)? {
                Some(sib) if sib > uoff && (sib.0 as u64) < unit_len => {
                    raw = unit.entries_raw(Some(sib))?;
                    depth_base = 1;
                }
                _ => {}
            }
        } else {
            raw.skip_attributes(abbrev.attributes())?;
        }
    }
    Ok((die, children))
}

/// Read the value of the DIE's first attribute `name`, if it has one, and skip its other
/// attributes: those before it and those after it each in one go (gimli skips a run of
/// fixed-size attributes at once).
pub(crate) fn read_one<'s>(
    raw: &mut gimli::EntriesRaw<'_, '_, R<'s>>,
    abbrev: &gimli::Abbreviation,
    name: gimli::DwAt,
) -> Result<Option<AttributeValue<R<'s>>>, gimli::Error> {
    let specs = abbrev.attributes();
    let Some(i) = specs.iter().position(|s| s.name() == name) else {
        raw.skip_attributes(specs)?;
        return Ok(None);
    };
    raw.skip_attributes(&specs[..i])?;
    let value = raw.read_attribute(specs[i])?.value();
    raw.skip_attributes(&specs[i + 1..])?;
    Ok(Some(value))
}

/// Read the DIE's attributes for its `DW_AT_sibling` (unit offset).
pub(crate) fn sibling(
    raw: &mut gimli::EntriesRaw<'_, '_, R<'_>>,
    abbrev: &gimli::Abbreviation,
) -> Result<Option<gimli::UnitOffset>, gimli::Error> {
    let value = read_one(raw, abbrev, dw::DW_AT_sibling)?;
    Ok(match value {
        Some(AttributeValue::UnitRef(o)) => Some(o),
        _ => None,
    })
}
