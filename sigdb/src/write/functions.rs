//! The function records: their canonical order (exact duplicates merged), the function,
//! code and symbol records with their parameter lists (identical lists shared), and the
//! module records holding each module's range of functions.

use rayon::prelude::*;

use super::builder::DbBuilder;
use super::desc::FunctionDesc;
use super::writer::Writer;
use crate::layout::*;
use crate::model::{FuncFlags, Location};
use crate::Error;

/// Canonical function order; exact duplicates merge. Returns the builder indices of the
/// output functions in order, and each builder function's output index.
pub(super) fn canonical_order(b: &DbBuilder) -> Result<(Vec<usize>, Vec<u32>), Error> {
    let fp = b.fingerprints();
    // Compared field by field in place: no key is built (and no string copied) per
    // function.
    let cmp = |x: &FunctionDesc, y: &FunctionDesc| {
        let head = |f: &FunctionDesc| {
            (
                f.module,
                // Functions without code first in their module.
                !f.flags.contains(FuncFlags::INLINE_ONLY),
                f.addr,
                f.size,
            )
        };
        fn params<'f>(
            f: &'f FunctionDesc,
            fp: &'f [u64],
        ) -> impl Iterator<Item = (&'f str, u64, Location)> + 'f {
            f.params
                .iter()
                .map(|p| (p.name.as_str(), fp[p.ty.0 as usize], p.loc))
        }
        head(x)
            .cmp(&head(y))
            .then_with(|| x.name.cmp(&y.name))
            .then_with(|| x.symbol.cmp(&y.symbol))
            .then_with(|| x.flags.cmp(&y.flags))
            .then_with(|| fp[x.ret.0 as usize].cmp(&fp[y.ret.0 as usize]))
            .then_with(|| params(x, &fp).cmp(params(y, &fp)))
    };
    let mut order: Vec<usize> = (0..b.functions.len()).collect();
    // Stable: equal functions keep their order of addition, as sequentially.
    order.par_sort_by(|&x, &y| cmp(&b.functions[x], &b.functions[y]));
    let mut new_index = vec![0u32; b.functions.len()];
    let mut unique: Vec<usize> = Vec::with_capacity(order.len());
    for &i in &order {
        if let Some(&last) = unique.last() {
            if cmp(&b.functions[last], &b.functions[i]).is_eq() {
                new_index[i] = unique.len() as u32 - 1;
                continue;
            }
        }
        new_index[i] = u32::try_from(unique.len()).map_err(|_| Error::TooLarge("functions"))?;
        unique.push(i);
    }
    Ok((unique, new_index))
}

impl Writer<'_, '_> {
    /// Every function's module exists.
    pub(super) fn check_modules(&self) -> Result<(), Error> {
        let b = self.b;
        for f in &b.functions {
            if f.module.0 as usize >= b.modules.len() {
                return Err(Error::Builder(format!(
                    "function {} refers to module {} of {}",
                    f.name,
                    f.module.0,
                    b.modules.len()
                )));
            }
        }
        Ok(())
    }

    /// The function records of `unique` (builder indices in output order), their symbol
    /// records, and (name string, function) pairs for the name index.
    #[allow(clippy::type_complexity)]
    pub(super) fn emit_functions(
        &mut self,
        unique: &[usize],
    ) -> Result<
        (
            Vec<FunctionRecord>,
            Vec<CodeRecord>,
            Vec<SymbolRecord>,
            Vec<(u32, u32)>,
        ),
        Error,
    > {
        let b = self.b;
        let mut functions = Vec::with_capacity(unique.len());
        let mut code = Vec::with_capacity(unique.len());
        let mut symbols: Vec<SymbolRecord> = Vec::new();
        let mut names: Vec<(u32, u32)> = Vec::new();
        // The functions' strings are looked up on all cores first; the records, whose
        // types and parameter lists are numbered in order, are then written one by one.
        let strings = self.strings;
        let (own, param_names) = rayon::join(
            || {
                unique
                    .par_iter()
                    .map(|&i| {
                        let f = &b.functions[i];
                        let symbol = match &f.symbol {
                            Some(s) if *s != f.name => strings.add(s)?,
                            _ => 0,
                        };
                        Ok((strings.add(&f.name)?, symbol))
                    })
                    .collect::<Result<Vec<(u32, u32)>, Error>>()
            },
            || {
                unique
                    .par_iter()
                    .flat_map_iter(|&i| b.functions[i].params.iter())
                    .map(|p| strings.add(&p.name))
                    .collect::<Result<Vec<u32>, Error>>()
            },
        );
        let (own, param_names) = (own?, param_names?);
        let mut next_param = 0;
        for (out, (&i, &(name, symbol))) in unique.iter().zip(&own).enumerate() {
            let f = &b.functions[i];
            let ret = self.emit_type(f.ret)?;
            let names_of_params = &param_names[next_param..next_param + f.params.len()];
            next_param += f.params.len();
            let (params, param_count) = self.emit_params(f, names_of_params)?;
            if ret > MAX_RET_TYPE {
                return Err(Error::TooLarge("types referenced by return types"));
            }
            if params > MAX_PARAM_INDEX {
                return Err(Error::TooLarge("parameter records"));
            }
            let inline_only = f.flags.contains(FuncFlags::INLINE_ONLY);
            let base = b.modules[f.module.0 as usize].base;
            let rel = match f.addr.checked_sub(base).map(u32::try_from) {
                _ if inline_only && f.addr == 0 => 0,
                Some(Ok(rel))
                    if u64::from(rel) + u64::from(f.size) <= u64::from(u32::MAX) + 1
                        && f.addr.checked_add(u64::from(f.size)).is_some() =>
                {
                    rel
                }
                _ => {
                    return Err(Error::Builder(format!(
                    "function {} at {:#x} is not within 4 GiB above its module's base {base:#x}",
                    f.name, f.addr
                )))
                }
            };
            if inline_only && (f.addr != 0 || f.size != 0) {
                return Err(Error::Builder(format!(
                    "inline-only function {} has code ({:#x}+{:#x})",
                    f.name, f.addr, f.size
                )));
            }
            if !inline_only {
                code.push(CodeRecord {
                    addr: rel.into(),
                    size: f.size.into(),
                });
            }
            functions.push(FunctionRecord {
                name: name.into(),
                params: (params | u32::from(param_count) << 24).into(),
                ret_flags: (ret | u32::from(f.flags.bits()) << 18).into(),
            });
            names.push((name, out as u32));
            if symbol != 0 {
                names.push((symbol, out as u32));
                symbols.push(SymbolRecord {
                    function: (out as u32).into(),
                    symbol: symbol.into(),
                });
            }
        }
        Ok((functions, code, symbols, names))
    }

    /// `f`'s parameter list, whose names are at `names` in the string table: (index of its
    /// first record, count). Identical lists share their records.
    pub(super) fn emit_params(
        &mut self,
        f: &FunctionDesc,
        names: &[u32],
    ) -> Result<(u32, u8), Error> {
        // Built in a buffer kept across calls; only a new list is copied into the map.
        let mut list = std::mem::take(&mut self.param_list);
        list.clear();
        for (p, &pname) in f.params.iter().zip(names) {
            let ty = self.emit_type(p.ty)?;
            list.push((pname, ty, p.loc.encode()));
        }
        let count = u8::try_from(list.len())
            .map_err(|_| Error::TooLarge("parameters of one function (255 at most)"))?;
        let known = self.param_lists.get(list.as_slice()).copied();
        if list.is_empty() || known.is_some() {
            self.param_list = list;
            return Ok((known.unwrap_or(0), count));
        }
        let first = self.params.len() as u32;
        for &(name, ty, (kind, reg, reg2, offset)) in &list {
            if ty > MAX_PARAM_TYPE {
                return Err(Error::TooLarge("types referenced by parameters"));
            }
            if name > MAX_PARAM_NAME {
                return Err(Error::TooLarge("strings (parameter names past 16 MiB)"));
            }
            // The operand in 14 bits when it fits, else in the param_values section.
            let short = match kind {
                1 => Some(u32::from(reg)),
                2 if reg < 128 && reg2 < 128 => Some(u32::from(reg) | u32::from(reg2) << 7),
                3 | 5 if (-8192..8192).contains(&offset) => Some(offset as u32 & 0x3fff),
                0 | 4 => Some(0),
                _ => None,
            };
            let index = self.params.len() as u32;
            let mut name_loc = name | u32::from(kind) << 24;
            if short.is_none() {
                name_loc |= PARAM_EXT;
                let value = match kind {
                    2 => u32::from(reg) | u32::from(reg2) << 8,
                    _ => offset as u32,
                };
                self.param_values.push(ParamValue {
                    param: index.into(),
                    value: value.into(),
                });
            }
            self.params.push(ParamRecord {
                name_loc: name_loc.into(),
                ty_op: (ty | short.unwrap_or(0) << 18).into(),
            });
        }
        self.param_lists.insert(list.clone(), first);
        self.param_list = list;
        Ok((first, count))
    }

    /// Module records with their function ranges (functions are sorted by module first).
    pub(super) fn module_records(&self, unique: &[usize]) -> Result<Vec<ModuleRecord>, Error> {
        let b = self.b;
        let mut modules = Vec::with_capacity(b.modules.len());
        let mut next = 0usize;
        let mut next_code = 0usize;
        for (mi, m) in b.modules.iter().enumerate() {
            let (first, first_code) = (next, next_code);
            while next < unique.len() && b.functions[unique[next]].module.0 as usize == mi {
                if !b.functions[unique[next]]
                    .flags
                    .contains(FuncFlags::INLINE_ONLY)
                {
                    next_code += 1;
                }
                next += 1;
            }
            let mut build_id = [0u8; MAX_BUILD_ID];
            build_id[..m.build_id.len()].copy_from_slice(&m.build_id);
            modules.push(ModuleRecord {
                name: self.strings.add(&m.name)?.into(),
                kind: (m.kind as u32).into(),
                first_function: (first as u32).into(),
                function_count: ((next - first) as u32).into(),
                build_id_len: (m.build_id.len() as u32).into(),
                first_code: (first_code as u32).into(),
                build_id,
                base: m.base.into(),
            });
        }
        Ok(modules)
    }
}
