//! The db as a linkable blob: an ELF relocatable object with the db in a `.dcg_sigdb`
//! section between the symbols `dcg_sigdb_start` and `dcg_sigdb_end` — the way the
//! kernel builds in `kheaders` and `config.gz` — and reading a db back out of any ELF file
//! (object, kernel module, program) that carries that section.

use std::path::Path;

use object::write::{Object, Symbol, SymbolSection};
use object::{
    Architecture, BinaryFormat, Endianness, Object as _, ObjectSection as _, SectionFlags,
    SectionKind, SymbolFlags, SymbolKind, SymbolScope,
};

use crate::error::{Error, Result};

/// Name of the ELF section that holds an embedded db.
pub const SECTION: &str = ".dcg_sigdb";
/// Global symbol at the start of the embedded db.
pub const START_SYMBOL: &str = "dcg_sigdb_start";
/// Global symbol just past the end of the embedded db.
pub const END_SYMBOL: &str = "dcg_sigdb_end";

const ELF_MAGIC: &[u8; 4] = b"\x7fELF";

/// An ELF relocatable object (`ET_REL`) for the db's machine (x86-64 unless the db
/// says aarch64, i386 or riscv64) holding `db` in section [`SECTION`] (`SHF_ALLOC`,
/// read-only, 8-byte aligned), with global symbols [`START_SYMBOL`] (offset 0) and
/// [`END_SYMBOL`] (offset = size), and an empty `.note.GNU-stack`. `db` is validated
/// first.
pub fn emit_object(db: &[u8]) -> Result<Vec<u8>> {
    let memory = Path::new("<memory>");
    let parsed = sigdb::Db::from_bytes(db.to_vec()).map_err(|e| db_error(memory, e))?;
    parsed.verify().map_err(|e| db_error(memory, e))?;
    let arch = match parsed.machine() {
        183 => Architecture::Aarch64,
        3 => Architecture::I386,
        243 => Architecture::Riscv64,
        _ => Architecture::X86_64,
    };
    let mut obj = Object::new(BinaryFormat::Elf, arch, Endianness::Little);
    let sec = obj.add_section(
        Vec::new(),
        SECTION.as_bytes().to_vec(),
        SectionKind::ReadOnlyData,
    );
    obj.set_section_data(sec, db, 8);
    for (name, value) in [(START_SYMBOL, 0), (END_SYMBOL, db.len() as u64)] {
        obj.add_symbol(Symbol {
            name: name.as_bytes().to_vec(),
            value,
            size: 0,
            kind: SymbolKind::Data,
            scope: SymbolScope::Dynamic,
            weak: false,
            section: SymbolSection::Section(sec),
            flags: SymbolFlags::None,
        });
    }
    // Without this note, linkers assume (and warn about) an executable stack.
    let stack = obj.add_section(
        Vec::new(),
        b".note.GNU-stack".to_vec(),
        SectionKind::Elf(object::elf::SHT_PROGBITS),
    );
    obj.section_mut(stack).flags = SectionFlags::Elf { sh_flags: 0 };
    obj.write().map_err(|e| Error::Elf {
        path: memory.to_path_buf(),
        what: format!("cannot write ELF object: {e}"),
    })
}

/// Write [`emit_object`]`(db)` to `path` as every output is written ([`dcg_outfile`]).
pub fn write_object(path: &Path, db: &[u8]) -> Result<()> {
    let bytes = emit_object(db)?;
    Ok(dcg_outfile::write(path, &bytes)?)
}

/// Whether `bytes` start like an ELF file.
pub fn is_elf(bytes: &[u8]) -> bool {
    bytes.starts_with(ELF_MAGIC)
}

/// The db bytes embedded in ELF file `bytes` (read from `path`, named in errors): the
/// contents of its [`SECTION`] section (decompressed if needed), without alignment
/// padding a linker may have added after it. Not validated here.
pub fn extract_from_elf(path: &Path, bytes: &[u8]) -> Result<Vec<u8>> {
    let elf_err = |what: String| Error::Elf {
        path: path.to_path_buf(),
        what,
    };
    let file =
        object::File::parse(bytes).map_err(|e| elf_err(format!("not a valid ELF file: {e}")))?;
    let section = file.section_by_name(SECTION).ok_or_else(|| {
        elf_err(format!(
            "ELF file has no {SECTION} section (make one with `dwarfscan --emit-object`)"
        ))
    })?;
    let data = section
        .uncompressed_data()
        .map_err(|e| elf_err(format!("cannot read section {SECTION}: {e}")))?;
    let mut data = data.into_owned();
    if data.is_empty() {
        return Err(elf_err(format!("section {SECTION} is empty")));
    }
    // A linker pads between input sections; keep exactly what the header records when the
    // rest is padding, so the db's own size check still catches real trailing garbage.
    if let Some(size) = recorded_size(&data) {
        if size < data.len() && data[size..].iter().all(|&b| b == 0) {
            data.truncate(size);
        }
    }
    Ok(data)
}

/// The `file_size` field of a sigdb header, if `bytes` hold one.
fn recorded_size(bytes: &[u8]) -> Option<usize> {
    const FILE_SIZE_AT: usize = 24;
    if !bytes.starts_with(&sigdb::layout::MAGIC) {
        return None;
    }
    let b = bytes.get(FILE_SIZE_AT..FILE_SIZE_AT + 8)?;
    usize::try_from(u64::from_le_bytes(b.try_into().ok()?)).ok()
}

/// Map a sigdb error on in-memory bytes to one naming `path`.
pub(crate) fn db_error(path: &Path, e: sigdb::Error) -> Error {
    match e {
        sigdb::Error::Format { error, .. } => Error::InvalidDb {
            path: path.to_path_buf(),
            error,
        },
        other => Error::Db(other),
    }
}
