//! The ELF side: file kind, DWARF sections (decompressed, relocated for `ET_REL`),
//! symbols, build-id and ftrace call sites.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use object::elf;
use object::read::elf::{ElfFile64, FileHeader, ProgramHeader};
use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget, SectionIndex, SectionKind};

use crate::symbols::{Symbol, Symbols};
use crate::ScanError;

/// What kind of ELF file an input is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElfKind {
    /// The Linux kernel image.
    Kernel,
    /// A loadable kernel module (`ET_REL` with `.modinfo`).
    KernelModule,
    /// A non-PIE executable.
    Executable,
    /// A position-independent executable.
    Pie,
    /// A shared library.
    SharedLibrary,
    /// A relocatable object.
    Object,
}

impl ElfKind {
    /// The sigdb module kind.
    pub fn module_kind(self) -> sigdb::ModuleKind {
        match self {
            ElfKind::Kernel => sigdb::ModuleKind::Kernel,
            ElfKind::KernelModule => sigdb::ModuleKind::KernelModule,
            ElfKind::Executable | ElfKind::Pie => sigdb::ModuleKind::Executable,
            ElfKind::SharedLibrary => sigdb::ModuleKind::SharedLibrary,
            ElfKind::Object => sigdb::ModuleKind::Object,
        }
    }

    /// Whether the file is relocatable (addresses laid out by dwarfscan).
    pub fn is_relocatable(self) -> bool {
        matches!(self, ElfKind::KernelModule | ElfKind::Object)
    }

    /// Whether the file is part of a Linux kernel.
    pub fn is_kernel(self) -> bool {
        matches!(self, ElfKind::Kernel | ElfKind::KernelModule)
    }
}

/// The DWARF sections dwarfscan reads.
pub const DWARF_SECTIONS: [gimli::SectionId; 11] = [
    gimli::SectionId::DebugAbbrev,
    gimli::SectionId::DebugAddr,
    gimli::SectionId::DebugInfo,
    gimli::SectionId::DebugLine,
    gimli::SectionId::DebugLineStr,
    gimli::SectionId::DebugLoc,
    gimli::SectionId::DebugLocLists,
    gimli::SectionId::DebugRanges,
    gimli::SectionId::DebugRngLists,
    gimli::SectionId::DebugStr,
    gimli::SectionId::DebugStrOffsets,
];

/// Everything dwarfscan needs from one ELF file.
pub struct ElfInfo<'a> {
    /// Kind of file.
    pub kind: ElfKind,
    /// `e_machine`.
    pub machine: u16,
    /// GNU build-id (empty when absent).
    pub build_id: Vec<u8>,
    /// Address bias for the module record.
    pub base: u64,
    /// Function symbols by address.
    pub symbols: Symbols<'a>,
    /// DWARF section contents by section id (missing sections are empty).
    pub sections: HashMap<gimli::SectionId, Cow<'a, [u8]>>,
    /// Sorted ftrace call-site addresses, when the file lists them (`__mcount_loc`).
    pub mcount: Option<Vec<u64>>,
    /// Relocations that could not be applied (unsupported types), counted.
    pub skipped_relocations: u64,
    /// Code sections with bytes in the file (not in a separate debug file, whose code
    /// sections are `NOBITS`): (address, bytes), of linked files only.
    pub code: Vec<(u64, &'a [u8])>,
}

impl<'a> ElfInfo<'a> {
    /// The code bytes from `addr` to the end of its section, when the file has them.
    pub fn code_at(&self, addr: u64) -> Option<&'a [u8]> {
        self.code.iter().find_map(|&(a, b)| {
            let off = usize::try_from(addr.checked_sub(a)?).ok()?;
            b.get(off..).filter(|r| !r.is_empty())
        })
    }

    /// The bytes of a DWARF section (empty when absent).
    pub fn section(&self, id: gimli::SectionId) -> &[u8] {
        self.sections.get(&id).map_or(&[], |c| c)
    }
}

type File64<'a> = ElfFile64<'a, object::Endianness>;

/// Largest expansion accepted from a compressed section: zlib cannot exceed 1032:1; zstd
/// can in theory, but no real DWARF section comes near it.
const MAX_COMPRESSION_RATIO: u64 = 1032;

/// The (decompressed) contents of a section. A compressed section whose header claims an
/// uncompressed size its compressed bytes cannot hold is rejected before anything is
/// allocated for it (a corrupt header would otherwise ask for up to 2^64 bytes).
fn section_data<'d>(sec: &impl ObjectSection<'d>) -> Result<Cow<'d, [u8]>, String> {
    let c = sec.compressed_data().map_err(|e| e.to_string())?;
    if c.format != object::CompressionFormat::None {
        let max = (c.data.len() as u64)
            .saturating_mul(MAX_COMPRESSION_RATIO)
            .saturating_add(4096);
        if c.uncompressed_size > max {
            return Err(format!(
                "corrupt compression header: {} bytes claimed from {} compressed",
                c.uncompressed_size,
                c.data.len()
            ));
        }
    }
    c.decompress().map_err(|e| e.to_string())
}

/// Parse an ELF file and extract its DWARF sections, symbols and metadata.
pub fn read_elf<'a>(path: &Path, data: &'a [u8]) -> Result<ElfInfo<'a>, ScanError> {
    check_ident(path, data)?;
    let file =
        File64::parse(data).map_err(|e| ScanError::unsupported(path, format!("bad ELF: {e}")))?;
    let (machine, kind) = machine_and_kind(path, &file)?;
    require_debug_info(path, &file)?;

    let bases = if kind.is_relocatable() {
        layout_sections(&file)
    } else {
        HashMap::new()
    };
    let section_base =
        |idx: Option<SectionIndex>| idx.and_then(|i| bases.get(&i).copied()).unwrap_or(0);

    // The symbol table is read while the DWARF sections are prepared (relocated or
    // decompressed where needed) and the mcount list is read: in a vmlinux each takes
    // tens of milliseconds.
    let (symbols, rest) = rayon::join(
        || {
            let mut syms = collect_symbols(file.symbols(), &section_base);
            if syms.is_empty() {
                syms = collect_symbols(file.dynamic_symbols(), &section_base);
            }
            Symbols::new(syms)
        },
        || {
            let mut skipped_relocations = 0;
            let sections =
                dwarf_sections(path, &file, kind, &section_base, &mut skipped_relocations)?;
            let mcount = if kind.is_kernel() {
                read_mcount(&file, kind, &section_base, &mut skipped_relocations)
            } else {
                None
            };
            Ok::<_, ScanError>((sections, mcount, skipped_relocations))
        },
    );
    let (sections, mcount, skipped_relocations) = rest?;

    let build_id = file.build_id().ok().flatten().unwrap_or(&[]).to_vec();

    let base = load_base(&file, kind);

    let code = if kind.is_relocatable() {
        Vec::new()
    } else {
        file.sections()
            .filter(|s| s.kind() == SectionKind::Text)
            .filter_map(|s| Some((s.address(), s.data().ok()?)))
            .filter(|(_, d)| !d.is_empty())
            .collect()
    };

    Ok(ElfInfo {
        kind,
        machine,
        build_id,
        base,
        symbols,
        sections,
        mcount,
        skipped_relocations,
        code,
    })
}

/// The identification bytes: an ELF file, 64-bit, little-endian.
fn check_ident(path: &Path, data: &[u8]) -> Result<(), ScanError> {
    let unsupported = |r: &str| ScanError::unsupported(path, r);
    if data.len() < 16 || &data[..4] != b"\x7fELF" {
        return Err(unsupported("not an ELF file"));
    }
    match data[4] {
        elf::ELFCLASS64 => {}
        elf::ELFCLASS32 => return Err(unsupported("32-bit ELF is not supported")),
        c => return Err(unsupported(&format!("unknown ELF class {c}"))),
    }
    if data[5] != elf::ELFDATA2LSB {
        return Err(unsupported("big-endian ELF is not supported"));
    }
    Ok(())
}

/// The machine (x86-64 only) and the kind of file, from its type, sections, symbols and
/// program headers.
fn machine_and_kind(path: &Path, file: &File64<'_>) -> Result<(u16, ElfKind), ScanError> {
    let unsupported = |r: &str| ScanError::unsupported(path, r);
    let endian = file.endian();
    let header = file.elf_header();
    let machine = header.e_machine(endian);
    if machine != elf::EM_X86_64 {
        return Err(unsupported(&format!(
            "ELF machine {machine} is not supported (only x86-64)"
        )));
    }
    let e_type = header.e_type(endian);
    let has_section = |n: &str| file.section_by_name(n).is_some();
    let kind = match e_type {
        elf::ET_REL => {
            if has_section(".modinfo") || has_section(".gnu.linkonce.this_module") {
                ElfKind::KernelModule
            } else {
                ElfKind::Object
            }
        }
        elf::ET_EXEC => {
            if has_section("__ksymtab_strings")
                || file.symbols().any(|s| s.name() == Ok("linux_banner"))
            {
                ElfKind::Kernel
            } else {
                ElfKind::Executable
            }
        }
        elf::ET_DYN => {
            let interp = file
                .elf_program_headers()
                .iter()
                .any(|p| p.p_type(endian) == elf::PT_INTERP);
            if interp {
                ElfKind::Pie
            } else {
                ElfKind::SharedLibrary
            }
        }
        t => return Err(unsupported(&format!("ELF type {t} is not supported"))),
    };
    Ok((machine, kind))
}

/// A non-empty `.debug_info`, or the error naming the debug link of a stripped file.
fn require_debug_info(path: &Path, file: &File64<'_>) -> Result<(), ScanError> {
    if file
        .section_by_name(".debug_info")
        .is_some_and(|s| s.size() > 0)
    {
        return Ok(());
    }
    let hint = file
        .gnu_debuglink()
        .ok()
        .flatten()
        .map(|(name, _)| {
            format!(
                " (stripped; debug info is in {})",
                String::from_utf8_lossy(name)
            )
        })
        .unwrap_or_default();
    Err(ScanError::NoDwarf {
        path: path.to_path_buf(),
        hint,
    })
}

/// The DWARF sections present, decompressed, and relocated in a relocatable file
/// (relocations that cannot be applied are counted in `skipped`).
fn dwarf_sections<'a>(
    path: &Path,
    file: &File64<'a>,
    kind: ElfKind,
    section_base: &dyn Fn(Option<SectionIndex>) -> u64,
    skipped: &mut u64,
) -> Result<HashMap<gimli::SectionId, Cow<'a, [u8]>>, ScanError> {
    let mut sections = HashMap::new();
    for id in DWARF_SECTIONS {
        let Some(sec) = file.section_by_name(id.name()) else {
            continue;
        };
        let data = section_data(&sec).map_err(|e| {
            ScanError::dwarf(path, format!("cannot read section {}: {e}", id.name()))
        })?;
        let data = if kind.is_relocatable() {
            relocate(file, &sec, data, section_base, skipped)
        } else {
            data
        };
        sections.insert(id, data);
    }
    Ok(sections)
}

/// The address bias of the module record: a kernel's first executable segment, a linked
/// program's or library's lowest segment, 0 for a relocatable file.
fn load_base(file: &File64<'_>, kind: ElfKind) -> u64 {
    let endian = file.endian();
    match kind {
        ElfKind::Kernel => file
            .elf_program_headers()
            .iter()
            .find(|p| p.p_type(endian) == elf::PT_LOAD && p.p_flags(endian) & elf::PF_X != 0)
            .map_or(0, |p| p.p_vaddr(endian)),
        ElfKind::Executable | ElfKind::Pie | ElfKind::SharedLibrary => file
            .elf_program_headers()
            .iter()
            .filter(|p| p.p_type(endian) == elf::PT_LOAD)
            .map(|p| p.p_vaddr(endian))
            .min()
            .unwrap_or(0),
        _ => 0,
    }
}

/// Assign addresses to the allocated sections of a relocatable file, as a linker would:
/// `.text` at 0, then the other code sections, then the rest, each aligned.
fn layout_sections(file: &File64<'_>) -> HashMap<SectionIndex, u64> {
    let mut order: Vec<(u8, SectionIndex, u64, u64)> = Vec::new();
    for s in file.sections() {
        let object::SectionFlags::Elf { sh_flags } = s.flags() else {
            continue;
        };
        if sh_flags & u64::from(elf::SHF_ALLOC) == 0 {
            continue;
        }
        let rank = if s.name() == Ok(".text") {
            0
        } else if s.kind() == SectionKind::Text {
            1
        } else {
            2
        };
        order.push((rank, s.index(), s.size(), s.align().max(1)));
    }
    order.sort_by_key(|&(rank, idx, _, _)| (rank, idx.0));
    let mut next = 0u64;
    let mut map = HashMap::new();
    for (_, idx, size, align) in order {
        next = next.div_ceil(align).saturating_mul(align);
        map.insert(idx, next);
        next = next.saturating_add(size);
    }
    map
}

/// The file ranges (offset, length) read only while relocating a relocatable file's
/// DWARF: each relocated `.debug_*` section (its relocated copy is what the scan reads)
/// and its `.rela` section. Empty for other files.
pub fn relocation_inputs(data: &[u8]) -> Vec<(u64, u64)> {
    let Ok(file) = File64::parse(data) else {
        return Vec::new();
    };
    if file.kind() != object::ObjectKind::Relocatable {
        return Vec::new();
    }
    let mut ranges = Vec::new();
    for id in DWARF_SECTIONS {
        let (Some(sec), Some(rela)) = (
            file.section_by_name(id.name()),
            file.section_by_name(&format!(".rela{}", id.name())),
        ) else {
            continue;
        };
        // A compressed section is decompressed into memory: its file bytes are not
        // what is read.
        ranges.extend(sec.file_range().filter(|_| {
            sec.compressed_file_range()
                .is_ok_and(|c| c.format == object::CompressionFormat::None)
        }));
        ranges.extend(rela.file_range());
    }
    ranges
}

/// Apply the absolute relocations of `sec` to a copy of its data.
fn relocate<'a>(
    file: &File64<'a>,
    sec: &object::read::elf::ElfSection64<'a, '_, object::Endianness>,
    data: Cow<'a, [u8]>,
    section_base: &dyn Fn(Option<SectionIndex>) -> u64,
    skipped: &mut u64,
) -> Cow<'a, [u8]> {
    let mut relocs = sec.relocations().peekable();
    if relocs.peek().is_none() {
        return data;
    }
    let mut out = data.into_owned();
    for (offset, r) in relocs {
        let object::RelocationFlags::Elf { r_type } = r.flags() else {
            *skipped += 1;
            continue;
        };
        let width = match r_type {
            elf::R_X86_64_64 => 8,
            elf::R_X86_64_32 | elf::R_X86_64_32S => 4,
            elf::R_X86_64_NONE => continue,
            _ => {
                *skipped += 1;
                continue;
            }
        };
        let symval = match r.target() {
            RelocationTarget::Symbol(i) => match file.symbol_by_index(i) {
                Ok(s) => s.address().wrapping_add(section_base(s.section_index())),
                Err(_) => {
                    *skipped += 1;
                    continue;
                }
            },
            RelocationTarget::Section(i) => section_base(Some(i)),
            RelocationTarget::Absolute => 0,
            _ => {
                *skipped += 1;
                continue;
            }
        };
        let Ok(off) = usize::try_from(offset) else {
            *skipped += 1;
            continue;
        };
        let Some(place) = out.get_mut(off..off.saturating_add(width)) else {
            *skipped += 1;
            continue;
        };
        let implicit = if r.has_implicit_addend() {
            let mut b = [0u8; 8];
            b[..width].copy_from_slice(place);
            u64::from_le_bytes(b) as i64
        } else {
            0
        };
        let value = symval
            .wrapping_add(r.addend() as u64)
            .wrapping_add(implicit as u64);
        place.copy_from_slice(&value.to_le_bytes()[..width]);
    }
    Cow::Owned(out)
}

/// The sorted ftrace call-site addresses: `__mcount_loc` (relocated in modules), or the
/// range `__start_mcount_loc..__stop_mcount_loc` of the kernel image.
fn read_mcount(
    file: &File64<'_>,
    kind: ElfKind,
    section_base: &dyn Fn(Option<SectionIndex>) -> u64,
    skipped: &mut u64,
) -> Option<Vec<u64>> {
    let bytes: Cow<'_, [u8]> = if kind == ElfKind::KernelModule {
        let sec = file.section_by_name("__mcount_loc")?;
        let data = section_data(&sec).ok()?;
        relocate(file, &sec, data, section_base, skipped)
    } else {
        let sym = |n: &str| {
            file.symbols()
                .find(|s| s.name() == Ok(n))
                .map(|s| s.address())
        };
        let start = sym("__start_mcount_loc")?;
        let stop = sym("__stop_mcount_loc")?;
        if stop <= start {
            return None;
        }
        let sec = file
            .sections()
            .find(|s| s.address() <= start && stop <= s.address() + s.size())?;
        let data = sec.data().ok()?;
        let from = usize::try_from(start - sec.address()).ok()?;
        let to = usize::try_from(stop - sec.address()).ok()?;
        Cow::Borrowed(data.get(from..to)?)
    };
    let mut v: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect();
    v.sort_unstable();
    v.dedup();
    (!v.is_empty()).then_some(v)
}

fn collect_symbols<'a: 'f, 'f>(
    it: impl Iterator<Item = object::read::elf::ElfSymbol64<'a, 'f, object::Endianness>>,
    section_base: &dyn Fn(Option<SectionIndex>) -> u64,
) -> Vec<Symbol<'a>> {
    let mut syms = Vec::new();
    for s in it {
        if s.kind() != object::SymbolKind::Text || !s.is_definition() {
            continue;
        }
        let Ok(name) = s.name() else { continue };
        if name.is_empty() {
            continue;
        }
        syms.push(Symbol {
            name,
            addr: s.address().wrapping_add(section_base(s.section_index())),
            size: s.size(),
            local: s.is_local(),
        });
    }
    syms
}
