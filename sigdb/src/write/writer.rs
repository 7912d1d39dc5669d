//! The writer: from a builder and its laid-out strings to the file's bytes. It owns the
//! records numbered while the functions are written (types, parameters), builds the
//! other sections from them in parallel and assembles the header and section table.
//! The sections are written by the modules named for them (`types.rs`, `functions.rs`,
//! `names.rs`, `callers.rs`, `instances.rs`).

use rustc_hash::FxHashMap as HashMap;
use zerocopy::IntoBytes;

use super::blocks::{self, Blocks};
use super::builder::DbBuilder;
use super::frames::{self, compress_blocks, Packed};
use super::instances;
use super::names::name_index;
use super::strings::StringTable;
use crate::layout::*;
use crate::Error;

/// The sections [`Writer::body`] builds.
struct Body {
    functions: Blocks,
    function_count: u32,
    code: Vec<CodeRecord>,
    symbols: Vec<SymbolRecord>,
    names: Vec<NameRecord>,
    buckets: Vec<u32>,
    inline_index: Vec<InlineBlock>,
    inline: Packed,
    inst: instances::Encoded,
    inst_data: Packed,
    modules: Vec<ModuleRecord>,
    params: Blocks,
    types: Blocks,
    members: Blocks,
}

/// A parameter as written: (name string, type index, encoded location).
pub(super) type EncodedParam = (u32, u32, (u8, u8, u8, i32));

pub(super) struct Writer<'b, 't> {
    pub(super) b: &'b DbBuilder,
    pub(super) strings: &'t StringTable<'b>,
    /// builder TypeId → output index (u32::MAX: not yet emitted).
    pub(super) type_index: Vec<u32>,
    /// Struct and union declarations → the one complete definition of the same kind and
    /// name, written in their place ([`super::types::completions`]).
    pub(super) complete: HashMap<crate::common::TypeId, crate::common::TypeId>,
    pub(super) types: Vec<TypeRecord>,
    /// The builder id of each type record (`None` for a void the builder did not have).
    pub(super) type_ids: Vec<Option<crate::common::TypeId>>,
    pub(super) members: Vec<MemberRecord>,
    pub(super) enumerators: Vec<EnumeratorRecord>,
    pub(super) proto_params: Vec<u32>,
    pub(super) params: Vec<ParamRecord>,
    pub(super) param_values: Vec<ParamValue>,
    pub(super) param_lists: HashMap<Vec<EncodedParam>, u32>,
    /// The parameter list [`Writer::emit_params`] is building.
    pub(super) param_list: Vec<EncodedParam>,
}

impl<'b, 't> Writer<'b, 't> {
    pub(super) fn new(
        b: &'b DbBuilder,
        strings: &'t StringTable<'b>,
        complete: HashMap<crate::common::TypeId, crate::common::TypeId>,
    ) -> Writer<'b, 't> {
        Writer {
            b,
            strings,
            type_index: vec![u32::MAX; b.types.len()],
            complete,
            types: Vec::new(),
            type_ids: Vec::new(),
            members: Vec::new(),
            enumerators: Vec::new(),
            proto_params: Vec::new(),
            params: Vec::new(),
            param_values: Vec::new(),
            param_lists: HashMap::default(),
            param_list: Vec::new(),
        }
    }

    /// The whole db: types from void on, functions in canonical order with their
    /// parameter lists, the name index, inline edges and instances, modules. Strings are
    /// looked up in the laid-out table, so the output is deterministic. The string frames
    /// and the instances (which need the order alone) are encoded while the records are
    /// written, and the parts that only read the records written before them (name index,
    /// modules, LZ4 blocks) are built after them at the same time; the caller lists
    /// (`callers`) were encoded with the order. Each part's bytes depend on its inputs
    /// alone.
    pub(super) fn write(
        mut self,
        order: &(Vec<usize>, Vec<u32>),
        callers: (Vec<InlineBlock>, Packed),
    ) -> Result<Vec<u8>, Error> {
        let b = self.b;
        let table = self.strings;
        let (strings, body) = rayon::join(
            || {
                frames::pack(
                    &table.frames,
                    &table.bytes,
                    1,
                    frames::STRING_LEVEL,
                    "strings (a frame past 16 MiB)",
                )
            },
            || self.body(order, callers),
        );
        let strings = strings?;
        let Body {
            functions,
            function_count,
            code,
            symbols,
            names,
            buckets,
            inline_index,
            inline,
            inst,
            inst_data,
            modules,
            params,
            types,
            members,
        } = body?;

        let sections: [&[u8]; SECTION_COUNT] = [
            &strings.bytes,
            modules.as_bytes(),
            &types.bytes,
            self.enumerators.as_bytes(),
            self.proto_params.as_bytes(),
            &functions.bytes,
            symbols.as_bytes(),
            &params.bytes,
            names.as_bytes(),
            inline_index.as_bytes(),
            &inline.bytes,
            inst.index.as_bytes(),
            &inst_data.bytes,
            inst.files.as_bytes(),
            self.param_values.as_bytes(),
            buckets.as_bytes(),
            code.as_bytes(),
            inline.frames.as_bytes(),
            inst_data.frames.as_bytes(),
            strings.frames.as_bytes(),
            params.offsets.as_bytes(),
            types.offsets.as_bytes(),
            &members.bytes,
            members.offsets.as_bytes(),
            functions.offsets.as_bytes(),
        ];
        let counts = [
            strings.bytes.len(),
            modules.len(),
            types.bytes.len(),
            self.enumerators.len(),
            self.proto_params.len(),
            functions.bytes.len(),
            symbols.len(),
            params.bytes.len(),
            names.len(),
            inline_index.len(),
            inline.bytes.len(),
            inst.index.len(),
            inst_data.bytes.len(),
            inst.files.len(),
            self.param_values.len(),
            buckets.len(),
            code.len(),
            inline.frames.len(),
            inst_data.frames.len(),
            strings.frames.len(),
            params.offsets.len(),
            types.offsets.len(),
            members.bytes.len(),
            members.offsets.len(),
            functions.offsets.len(),
        ];
        let records = Records {
            instances: inst.count,
            params: u32::try_from(self.params.len())
                .map_err(|_| Error::TooLarge("parameter records"))?,
            types: u32::try_from(self.types.len()).map_err(|_| Error::TooLarge("types"))?,
            members: u32::try_from(self.members.len()).map_err(|_| Error::TooLarge("members"))?,
            functions: function_count,
        };
        assemble(b, &sections, &counts, &records)
    }

    /// Everything but the string frames: the records, then (in parallel) the parts built
    /// from them; the caller lists come encoded.
    fn body(
        &mut self,
        order: &(Vec<usize>, Vec<u32>),
        (inline_index, inline): (Vec<InlineBlock>, Packed),
    ) -> Result<Body, Error> {
        let b = self.b;
        self.check_modules()?;
        self.emit_void()?;
        let (unique, new_index) = order;
        let strings = self.strings;
        // The instances need the functions' order and addresses alone: they are encoded
        // while the function, type and parameter records are written.
        let instances = || {
            let addrs: Vec<u64> = unique.iter().map(|&i| b.functions[i].addr).collect();
            let mut inst = instances::encode(&b.instances, new_index, &addrs, strings)?;
            let packed = compress_blocks(
                inst.index.iter_mut().map(|b| &mut b.offset),
                &inst.data,
                "inline instances (a frame past 16 MiB)",
            )?;
            Ok::<_, Error>((inst, packed))
        };
        let records = || {
            let (functions, code, symbols, names) = self.emit_functions(unique)?;
            let functions_len = functions.len();
            self.emit_members()?;
            let this = &*self;
            let (names, rest) = rayon::join(
                || name_index(&strings.bytes, names),
                || {
                    let modules = this.module_records(unique)?;
                    let params =
                        blocks::pack_records(&this.params, PARAM_BLOCK, "parameter records")?;
                    let functions =
                        blocks::pack_records(&functions, FUNCTION_BLOCK, "function records")?;
                    let types = blocks::pack_records(&this.types, TYPE_BLOCK, "type records")?;
                    let members =
                        blocks::pack_records(&this.members, MEMBER_BLOCK, "member records")?;
                    Ok::<_, Error>((modules, params, types, members, functions))
                },
            );
            Ok::<_, Error>((functions_len, code, symbols, names, rest))
        };
        let (instances, records) = rayon::join(instances, records);
        let (functions_len, code, symbols, names, rest) = records?;
        let (names, buckets) = names?;
        let (inst, inst_data) = instances?;
        let (modules, params, types, members, functions) = rest?;
        let function_count =
            u32::try_from(functions_len).map_err(|_| Error::TooLarge("functions"))?;
        Ok(Body {
            functions,
            function_count,
            code,
            symbols,
            names,
            buckets,
            inline_index,
            inline,
            inst,
            inst_data,
            modules,
            params,
            types,
            members,
        })
    }
}

/// The record counts of the packed sections, kept in the header.
struct Records {
    instances: u32,
    params: u32,
    types: u32,
    members: u32,
    functions: u32,
}

fn assemble(
    b: &DbBuilder,
    sections: &[&[u8]; SECTION_COUNT],
    counts: &[usize; SECTION_COUNT],
    records: &Records,
) -> Result<Vec<u8>, Error> {
    let header_size = core::mem::size_of::<Header>();
    let total = sections
        .iter()
        .fold(header_size, |at, s| at.next_multiple_of(ALIGN) + s.len());
    let mut out = Vec::with_capacity(total.next_multiple_of(ALIGN));
    out.resize(header_size, 0);
    let mut table = [SectionEntry::default(); SECTION_COUNT];
    for (i, bytes) in sections.iter().enumerate() {
        while !out.len().is_multiple_of(ALIGN) {
            out.push(0);
        }
        let count = u32::try_from(counts[i]).map_err(|_| Error::TooLarge(SECTION_NAMES[i]))?;
        table[i] = SectionEntry {
            offset: (out.len() as u64).into(),
            length: (bytes.len() as u64).into(),
            count: count.into(),
            record_size: (RECORD_SIZES[i] as u32).into(),
        };
        out.extend_from_slice(bytes);
    }
    while !out.len().is_multiple_of(ALIGN) {
        out.push(0);
    }
    let mut build_id = [0u8; MAX_BUILD_ID];
    build_id[..b.build_id.len()].copy_from_slice(&b.build_id);
    let header = Header {
        magic: MAGIC,
        version: VERSION.into(),
        header_size: (header_size as u32).into(),
        flags: b.flags.bits().into(),
        section_count: (SECTION_COUNT as u32).into(),
        file_size: (out.len() as u64).into(),
        body_crc32: crc32fast::hash(&out[header_size..]).into(),
        build_id_len: (b.build_id.len() as u32).into(),
        build_id,
        machine: b.machine.into(),
        instance_count: records.instances.into(),
        param_count: records.params.into(),
        type_count: records.types.into(),
        member_count: records.members.into(),
        function_count: records.functions.into(),
        sections: table,
    };
    out[..header_size].copy_from_slice(header.as_bytes());
    Ok(out)
}
