//! What an open [`Db`] answers: its header fields, modules, functions, types, names and
//! inline instances, by index, by address and by name. Every answer is a view into the
//! validated bytes (`db.rs` opens and checks them).

use std::cmp::Ordering;

use super::instances::{Instance, InstanceIter};
use super::view::{Function, Module, Type};
use super::Db;
use crate::layout::*;
use crate::model::*;

impl Db {
    /// Each section's name and length in bytes, in file order: where the bytes go.
    pub fn section_sizes(&self) -> impl Iterator<Item = (&'static str, usize)> + '_ {
        SECTION_NAMES
            .iter()
            .zip(self.sections.iter())
            .map(|(name, &(_, len))| (*name, len))
    }

    /// Format version.
    pub fn version(&self) -> u32 {
        self.header().version.get()
    }

    /// Header flags.
    pub fn flags(&self) -> DbFlags {
        DbFlags::from_bits_truncate(self.header().flags.get())
    }

    /// ELF machine of the inputs.
    pub fn machine(&self) -> u32 {
        self.header().machine.get()
    }

    /// Build-id of the primary input (empty when unknown).
    pub fn build_id(&self) -> &[u8] {
        let h = self.header();
        &h.build_id[..(h.build_id_len.get() as usize).min(MAX_BUILD_ID)]
    }

    /// CRC-32 of the body, as recorded in the header.
    pub fn checksum(&self) -> u32 {
        self.header().body_crc32.get()
    }

    /// Number of modules.
    pub fn module_count(&self) -> usize {
        self.module_records().len()
    }

    /// Module by index.
    pub fn module(&self, index: usize) -> Option<Module<'_>> {
        self.module_records()
            .get(index)
            .map(|rec| Module::new(self, index as u32, rec))
    }

    /// All modules.
    pub fn modules(&self) -> impl ExactSizeIterator<Item = Module<'_>> + '_ {
        self.module_records()
            .iter()
            .enumerate()
            .map(|(i, rec)| Module::new(self, i as u32, rec))
    }

    /// The first module of that name.
    pub fn module_by_name(&self, name: &str) -> Option<Module<'_>> {
        self.modules().find(|m| m.name() == name)
    }

    /// Number of functions.
    pub fn function_count(&self) -> usize {
        self.header().function_count.get() as usize
    }

    /// Function by index (`None` past the end; in a damaged block, a function without
    /// name, parameters or flags: see [`Db::check_frames`]).
    pub fn function(&self, index: usize) -> Option<Function<'_>> {
        (index < self.function_count()).then(|| self.function_at(index as u32))
    }

    /// Function `index`, known to be below the count.
    fn function_at(&self, index: u32) -> Function<'_> {
        let rec = self
            .function_record(index)
            .unwrap_or(&super::view::UNKNOWN_FUNCTION);
        Function::new(self, index, rec)
    }

    /// All functions, in (module, address) order.
    pub fn functions(&self) -> impl ExactSizeIterator<Item = Function<'_>> + '_ {
        (0..self.function_count() as u32).map(move |i| self.function_at(i))
    }

    /// Number of types.
    pub fn type_count(&self) -> usize {
        self.header().type_count.get() as usize
    }

    /// Type by index (`None` past the end, or in a damaged block: see
    /// [`Db::check_frames`]).
    pub fn type_at(&self, index: u32) -> Option<Type<'_>> {
        self.type_record(index)
            .map(|rec| Type::new(self, index, rec))
    }

    /// Number of member records (0 in a version 5 db, which records none).
    pub fn member_count(&self) -> usize {
        self.header().member_count.get() as usize
    }

    /// Number of parameter records (shared by functions with identical lists).
    pub fn param_record_count(&self) -> usize {
        self.header().param_count.get() as usize
    }

    /// The function of module `module` whose code contains `addr` (binary search).
    pub fn by_addr(&self, module: usize, addr: u64) -> Option<Function<'_>> {
        let m = self.module_records().get(module)?;
        let rel = u32::try_from(addr.checked_sub(m.base.get())?).ok()?;
        let code = self.module_code(module);
        // The module's functions with code are its last ones, in code record order.
        let first = m.first_function.get() as usize
            + (m.function_count.get() as usize).saturating_sub(code.len());
        // Index of the first code record starting above addr; the candidates are the
        // records sharing the greatest start address not above addr (aliases).
        let end = code.partition_point(|c| c.addr.get() <= rel);
        let start = code.get(end.checked_sub(1)?)?.addr.get();
        let group = code[..end]
            .iter()
            .rev()
            .take_while(|c| c.addr.get() == start);
        for (back, c) in group.enumerate() {
            if u64::from(rel) < u64::from(c.addr.get()) + u64::from(c.size.get()) {
                return self.function(first + end - 1 - back);
            }
        }
        None
    }

    /// The function containing `addr` in any module (first match in module order).
    pub fn by_addr_any(&self, addr: u64) -> Option<Function<'_>> {
        (0..self.module_count()).find_map(|m| self.by_addr(m, addr))
    }

    /// The name index entries of the bucket holding hash `h`.
    fn name_bucket_entries(&self, h: u32) -> &[NameRecord] {
        let names = self.name_records();
        let starts: &[zerocopy::little_endian::U32] = self.records(SectionId::NameBuckets);
        // Validated: 2^k + 1 non-decreasing starts, the last one names.len().
        let bits = (starts.len().saturating_sub(1)).trailing_zeros();
        let b = name_bucket(h, bits) as usize;
        match (starts.get(b), starts.get(b + 1)) {
            (Some(lo), Some(hi)) => names
                .get(lo.get() as usize..hi.get() as usize)
                .unwrap_or(&[]),
            _ => &[],
        }
    }

    /// Every function whose name or ELF symbol name is `name`.
    pub fn by_name<'a>(&'a self, name: &str) -> impl Iterator<Item = Function<'a>> + 'a {
        let key = name.as_bytes();
        let h = name_hash(key);
        // Hash to a bucket of about eight entries; compare 8-bit tags there, and only on
        // a tag match touch the string table.
        let mut hits = [0u32; 4];
        let mut extra = Vec::new();
        let mut count = 0;
        for n in self.name_bucket_entries(h) {
            if n.tag() != h as u8 {
                continue;
            }
            let f = n.function();
            let Some(rec) = self.function_record(f) else {
                continue;
            };
            if cmp_cstr(self.string_tail(rec.name.get()), key) == Ordering::Equal
                || cmp_cstr(self.string_tail(self.symbol_of(f)), key) == Ordering::Equal
            {
                match hits.get_mut(count) {
                    Some(slot) => *slot = f,
                    None => extra.push(f),
                }
                count += 1;
            }
        }
        hits.into_iter()
            .take(count.min(4))
            .chain(extra)
            .filter_map(move |i| self.function(i as usize))
    }

    /// Every name in the index (function and symbol names) with its function, in index
    /// order (by name hash).
    pub fn names(&self) -> impl Iterator<Item = (&str, Function<'_>)> + '_ {
        self.name_records().iter().filter_map(move |n| {
            let f = self.function(n.function() as usize)?;
            // The entry's key is whichever of the two names has the entry's tag.
            let key = if name_hash(f.name().as_bytes()) as u8 == n.tag() {
                f.name()
            } else {
                f.symbol()
            };
            Some((key, f))
        })
    }

    /// Functions that `callee` was inlined into, in function-index order.
    pub fn inlined_into(&self, callee: u32) -> impl Iterator<Item = Function<'_>> + '_ {
        self.callers_of(callee)
            .into_iter()
            .flatten()
            .filter_map(move |c| self.function(c as usize))
    }

    /// Number of inline instances.
    pub fn instance_count(&self) -> usize {
        self.header().instance_count.get() as usize
    }

    /// Inline instance by index.
    pub fn instance(&self, index: usize) -> Option<Instance<'_>> {
        if index >= self.instance_count() {
            return None;
        }
        InstanceIter::at_block(self, index / INSTANCE_BLOCK, self.instance_count() as u32)
            .nth(index % INSTANCE_BLOCK)
    }

    /// All inline instances, in (caller, depth, entry pc) order.
    pub fn instances(&self) -> impl ExactSizeIterator<Item = Instance<'_>> + '_ {
        InstanceIter::at_block(self, 0, self.instance_count() as u32)
    }

    /// The inline instances inside the code of function `caller` (binary search on the
    /// block index, then a scan of the blocks holding them).
    pub fn instances_in(&self, caller: u32) -> impl Iterator<Item = Instance<'_>> + '_ {
        let blocks = self.instance_index();
        // The caller's first instance is in the last block starting below it, or in the
        // first block starting with it.
        let k = blocks.partition_point(|b| b.caller.get() < caller);
        InstanceIter::at_block(self, k.saturating_sub(1), self.instance_count() as u32)
            .skip_while(move |i| i.caller_index() < caller)
            .take_while(move |i| i.caller_index() == caller)
    }

    /// Every inlined copy of function `callee` (a scan of all instances).
    pub fn instances_of(&self, callee: u32) -> impl Iterator<Item = Instance<'_>> + '_ {
        self.instances().filter(move |i| i.callee_index() == callee)
    }
}

/// Compare the NUL-terminated string starting `tail` with `key`, without scanning for
/// the NUL first: the terminator sorts below every other byte, as a shorter prefix does.
fn cmp_cstr(tail: &[u8], key: &[u8]) -> Ordering {
    let n = key.len().min(tail.len());
    match tail[..n].cmp(&key[..n]) {
        Ordering::Equal if n == key.len() => match tail.get(n) {
            Some(0) | None => Ordering::Equal,
            Some(_) => Ordering::Greater,
        },
        Ordering::Equal => Ordering::Less,
        other => other,
    }
}
