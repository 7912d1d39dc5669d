//! A minimal BTF reader: enough to spell every FUNC's prototype in C, the way
//! `sigdb::Type::declare` spells dcg's, and to list every struct's and union's members,
//! for comparing the two.

use std::collections::HashMap;

#[derive(Clone, Debug)]
pub struct BtfType {
    pub kind: u32,
    pub name: String,
    pub size_or_type: u32,
    pub vlen: u32,
    pub kind_flag: bool,
    /// FUNC_PROTO params (name, type) / ARRAY (elem, nelems) stored here.
    pub params: Vec<(String, u32)>,
    pub nelems: u32,
    /// STRUCT/UNION members: (name, bit offset, bit-field width or 0).
    pub members: Vec<(String, u32, u32)>,
}

pub struct Btf {
    pub types: Vec<BtfType>,
}

/// A BTF function: name, return type and parameters, spelled in C.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BtfFunc {
    pub name: String,
    pub ret: String,
    pub params: Vec<(String, String)>,
    pub variadic: bool,
}

const INT: u32 = 1;
const PTR: u32 = 2;
const ARRAY: u32 = 3;
const STRUCT: u32 = 4;
const UNION: u32 = 5;
const ENUM: u32 = 6;
const FWD: u32 = 7;
const TYPEDEF: u32 = 8;
const VOLATILE: u32 = 9;
const CONST: u32 = 10;
const RESTRICT: u32 = 11;
const FUNC: u32 = 12;
const FUNC_PROTO: u32 = 13;
const FLOAT: u32 = 16;
const TYPE_TAG: u32 = 18;
const ENUM64: u32 = 19;

fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?))
}

impl Btf {
    /// Parse a `.BTF` section (little-endian).
    pub fn parse(b: &[u8]) -> Option<Btf> {
        if b.get(0..2)? != [0x9f, 0xeb] {
            return None;
        }
        let hdr_len = u32_at(b, 4)? as usize;
        let type_off = u32_at(b, 8)? as usize;
        let type_len = u32_at(b, 12)? as usize;
        let str_off = u32_at(b, 16)? as usize;
        let str_len = u32_at(b, 20)? as usize;
        let strs = b.get(hdr_len + str_off..hdr_len + str_off + str_len)?;
        let s = |o: u32| -> String {
            let o = o as usize;
            let t = &strs[o.min(strs.len())..];
            String::from_utf8_lossy(&t[..t.iter().position(|&c| c == 0).unwrap_or(t.len())])
                .into_owned()
        };
        let tb = b.get(hdr_len + type_off..hdr_len + type_off + type_len)?;
        let mut types = vec![BtfType {
            kind: 0,
            name: "void".into(),
            size_or_type: 0,
            vlen: 0,
            kind_flag: false,
            params: vec![],
            nelems: 0,
            members: vec![],
        }];
        let mut o = 0;
        while o + 12 <= tb.len() {
            let name = s(u32_at(tb, o)?);
            let info = u32_at(tb, o + 4)?;
            let st = u32_at(tb, o + 8)?;
            o += 12;
            let vlen = info & 0xffff;
            let kind = (info >> 24) & 0x1f;
            let mut t = BtfType {
                kind,
                name,
                size_or_type: st,
                vlen,
                kind_flag: info >> 31 != 0,
                params: vec![],
                nelems: 0,
                members: vec![],
            };
            match kind {
                INT => o += 4,
                ARRAY => {
                    t.size_or_type = u32_at(tb, o)?;
                    t.nelems = u32_at(tb, o + 8)?;
                    o += 12;
                }
                STRUCT | UNION => {
                    for i in 0..vlen as usize {
                        let n = s(u32_at(tb, o + 12 * i)?);
                        let off = u32_at(tb, o + 12 * i + 8)?;
                        // With kind_flag, the offset packs the bit-field width above
                        // a 24-bit bit offset.
                        t.members.push(if t.kind_flag {
                            (n, off & 0xff_ffff, off >> 24)
                        } else {
                            (n, off, 0)
                        });
                    }
                    o += 12 * vlen as usize;
                }
                ENUM => o += 8 * vlen as usize,
                FUNC_PROTO => {
                    for i in 0..vlen as usize {
                        let n = s(u32_at(tb, o + 8 * i)?);
                        let ty = u32_at(tb, o + 8 * i + 4)?;
                        t.params.push((n, ty));
                    }
                    o += 8 * vlen as usize;
                }
                14 => o += 4,
                15 => o += 12 * vlen as usize,
                17 => o += 4,
                ENUM64 => o += 12 * vlen as usize,
                _ => {}
            }
            types.push(t);
        }
        Some(Btf { types })
    }

    fn get(&self, id: u32) -> &BtfType {
        self.types.get(id as usize).unwrap_or(&self.types[0])
    }

    fn skip_tags(&self, mut id: u32) -> u32 {
        while self.get(id).kind == TYPE_TAG {
            id = self.get(id).size_or_type;
        }
        id
    }

    fn base_name(&self, t: &BtfType) -> String {
        let anon = |tag: &str| {
            if t.name.is_empty() {
                format!("{tag} <anon>")
            } else {
                format!("{tag} {}", t.name)
            }
        };
        match t.kind {
            0 => "void".into(),
            STRUCT => anon("struct"),
            UNION => anon("union"),
            ENUM | ENUM64 => anon("enum"),
            FWD => anon(if t.kind_flag { "union" } else { "struct" }),
            _ => t.name.clone(),
        }
    }

    /// C declaration of `name` with type `id`, spelled like `sigdb::Type::declare`.
    pub fn declare(&self, id: u32, name: &str) -> String {
        let mut id = self.skip_tags(id);
        let mut inner = name.to_string();
        loop {
            let t = self.get(id);
            match t.kind {
                PTR => {
                    let target = self.skip_tags(t.size_or_type);
                    let tk = self.get(target).kind;
                    inner = if tk == FUNC_PROTO || tk == ARRAY {
                        format!("(*{inner})")
                    } else {
                        format!("*{inner}")
                    };
                    id = target;
                }
                CONST | VOLATILE | RESTRICT => {
                    // Collect a run of qualifiers: sigdb spells them in a fixed order.
                    let mut quals = 0u8;
                    let mut cur = id;
                    loop {
                        let c = self.get(cur);
                        match c.kind {
                            CONST => quals |= 1,
                            VOLATILE => quals |= 2,
                            RESTRICT => quals |= 4,
                            TYPE_TAG => {}
                            _ => break,
                        }
                        cur = c.size_or_type;
                    }
                    let mut words = vec![];
                    if quals & 1 != 0 {
                        words.push("const");
                    }
                    if quals & 2 != 0 {
                        words.push("volatile");
                    }
                    if quals & 4 != 0 {
                        words.push("restrict");
                    }
                    let q = words.join(" ");
                    if self.get(cur).kind == PTR {
                        inner = join(&q, &inner);
                        id = cur;
                    } else {
                        return format!("{q} {}", self.declare(cur, &inner));
                    }
                }
                ARRAY => {
                    inner = if t.nelems == 0 {
                        format!("{inner}[]")
                    } else {
                        format!("{inner}[{}]", t.nelems)
                    };
                    id = self.skip_tags(t.size_or_type);
                }
                FUNC_PROTO => {
                    let mut params: Vec<String> = vec![];
                    for (n, ty) in &t.params {
                        if *ty == 0 && n.is_empty() {
                            params.push("...".into());
                        } else {
                            params.push(self.declare(*ty, ""));
                        }
                    }
                    if params.is_empty() {
                        params.push("void".into());
                    }
                    inner = format!("{inner}({})", params.join(", "));
                    id = self.skip_tags(t.size_or_type);
                }
                _ => return join(&self.base_name(t), &inner),
            }
        }
    }

    /// Every FUNC with its prototype spelled in C.
    pub fn funcs(&self) -> Vec<BtfFunc> {
        let mut out = vec![];
        for t in &self.types {
            if t.kind != FUNC {
                continue;
            }
            let proto = self.get(t.size_or_type);
            if proto.kind != FUNC_PROTO {
                continue;
            }
            let mut params = vec![];
            let mut variadic = false;
            for (n, ty) in &proto.params {
                if *ty == 0 && n.is_empty() {
                    variadic = true;
                } else {
                    params.push((n.clone(), self.declare(*ty, "")));
                }
            }
            out.push(BtfFunc {
                name: t.name.clone(),
                ret: self.declare(proto.size_or_type, ""),
                params,
                variadic,
            });
        }
        out
    }
}

fn join(base: &str, inner: &str) -> String {
    if inner.is_empty() {
        base.to_string()
    } else if base.is_empty() {
        inner.to_string()
    } else if inner.starts_with('*') && base.ends_with('*') {
        format!("{base}{inner}")
    } else {
        format!("{base} {inner}")
    }
}

/// The outcome of comparing BTF with a dcg database.
#[derive(Default, Debug)]
pub struct Agreement {
    pub total: usize,
    pub agree: usize,
    /// Disagreement class → count, with a few examples.
    pub classes: HashMap<&'static str, (usize, Vec<String>)>,
}

impl Agreement {
    pub fn percent(&self) -> f64 {
        if self.total == 0 {
            100.0
        } else {
            100.0 * self.agree as f64 / self.total as f64
        }
    }

    pub fn report(&self) -> String {
        let mut s = format!(
            "BTF functions: {}, agree: {} ({:.2} %)\n",
            self.total,
            self.agree,
            self.percent()
        );
        let mut classes: Vec<_> = self.classes.iter().collect();
        classes.sort_by_key(|(_, (n, _))| std::cmp::Reverse(*n));
        for (c, (n, ex)) in classes {
            s.push_str(&format!("  {c}: {n}\n"));
            for e in ex {
                s.push_str(&format!("      {e}\n"));
            }
        }
        s
    }
}

/// Compare every BTF function with the dcg records of the same name (in any module).
pub fn compare(btf: &[BtfFunc], db: &sigdb::Db) -> Agreement {
    let mut a = Agreement {
        total: btf.len(),
        ..Default::default()
    };
    for f in btf {
        let cands: Vec<_> = db.by_name(&f.name).filter(|c| c.name() == f.name).collect();
        let mut class: Option<&'static str> = None;
        let mut detail = String::new();
        if cands.is_empty() {
            class = Some("missing in dcg");
            detail = f.name.clone();
        } else {
            let mut best = u8::MAX;
            for c in &cands {
                let ret = c.ret().display();
                let params: Vec<(String, String)> = c
                    .params()
                    .map(|p| (p.name().to_string(), p.ty().display()))
                    .collect();
                let variadic = c.flags().contains(sigdb::FuncFlags::VARIADIC);
                let (rank, cl) = if ret != f.ret {
                    (4, "return type differs")
                } else if params.len() != f.params.len() {
                    (3, "parameter count differs")
                } else if params.iter().zip(&f.params).any(|(x, y)| x.1 != y.1) {
                    (2, "parameter type differs")
                } else if params.iter().zip(&f.params).any(|(x, y)| x.0 != y.0) {
                    (1, "parameter name differs")
                } else if variadic != f.variadic {
                    (1, "variadic differs")
                } else {
                    (0, "")
                };
                if rank < best {
                    best = rank;
                    class = (rank > 0).then_some(cl);
                    detail = format!(
                        "{}: btf `{} ({})` dcg `{} ({})`",
                        f.name,
                        f.ret,
                        f.params
                            .iter()
                            .map(|p| format!("{} {}", p.1, p.0))
                            .collect::<Vec<_>>()
                            .join(", "),
                        ret,
                        params
                            .iter()
                            .map(|p| format!("{} {}", p.1, p.0))
                            .collect::<Vec<_>>()
                            .join(", "),
                    );
                }
            }
        }
        match class {
            None => a.agree += 1,
            Some(c) => {
                let e = a.classes.entry(c).or_default();
                e.0 += 1;
                if e.1.len() < 5 {
                    e.1.push(detail);
                }
            }
        }
    }
    a
}

/// A struct or union of BTF or of a db, its members as (name, bit offset, bit-field width).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Aggregate {
    pub union: bool,
    pub name: String,
    pub size: u32,
    pub members: Vec<(String, u32, u32)>,
}

impl Btf {
    /// Every named struct and union (FWDs, which have no members, left out).
    pub fn aggregates(&self) -> Vec<Aggregate> {
        self.types
            .iter()
            .filter(|t| matches!(t.kind, STRUCT | UNION) && !t.name.is_empty())
            .map(|t| Aggregate {
                union: t.kind == UNION,
                name: t.name.clone(),
                size: t.size_or_type,
                members: t.members.clone(),
            })
            .collect()
    }
}

/// Every named struct and union of `db` that is not a declaration, with its members.
pub fn db_aggregates(db: &sigdb::Db) -> Vec<Aggregate> {
    let mut out = vec![];
    for i in 0..db.type_count() as u32 {
        let Some(t) = db.type_at(i) else { continue };
        let union = match t.kind() {
            sigdb::TypeKind::Struct => false,
            sigdb::TypeKind::Union => true,
            _ => continue,
        };
        if t.name().is_empty() || t.flags().contains(sigdb::TypeFlags::DECLARATION) {
            continue;
        }
        let members = t
            .members()
            .expect("members recorded")
            .map(|m| {
                let m = m.expect("member block");
                (m.name().to_string(), m.bit_offset(), m.bit_size())
            })
            .collect();
        out.push(Aggregate {
            union,
            name: t.name().to_string(),
            size: t.size(),
            members,
        });
    }
    out
}

/// The outcome of comparing the structs and unions of BTF and of a db.
#[derive(Default, Debug)]
pub struct MemberAgreement {
    /// Named structs and unions in BTF.
    pub btf: usize,
    /// Those the db has too, same kind, name and size.
    pub compared: usize,
    /// Those whose member lists are identical (names, bit offsets, bit-field widths).
    pub identical: usize,
    /// Members compared (of the structs compared) and identical.
    pub members: usize,
    pub members_identical: usize,
    /// Disagreement class → count, with a few examples.
    pub classes: HashMap<&'static str, (usize, Vec<String>)>,
}

impl MemberAgreement {
    pub fn report(&self) -> String {
        let mut s = format!(
            "BTF structs and unions: {}, in the db with the same size: {}, identical members: \
             {} ({} of {} members)\n",
            self.btf, self.compared, self.identical, self.members_identical, self.members
        );
        let mut classes: Vec<_> = self.classes.iter().collect();
        classes.sort_by_key(|(_, (n, _))| std::cmp::Reverse(*n));
        for (c, (n, ex)) in classes {
            s.push_str(&format!("  {c}: {n}\n"));
            for e in ex {
                s.push_str(&format!("      {e}\n"));
            }
        }
        s
    }

    fn count(&mut self, class: &'static str, detail: String) {
        let e = self.classes.entry(class).or_default();
        e.0 += 1;
        if e.1.len() < 5 {
            e.1.push(detail);
        }
    }
}

/// Compare every named BTF struct and union with the db's of the same kind, name and
/// size (any of them when the db has several: the same name may be two structs).
pub fn compare_members(btf: &[Aggregate], db: &[Aggregate]) -> MemberAgreement {
    let mut by_key: HashMap<(bool, &str, u32), Vec<&Aggregate>> = HashMap::new();
    let mut names: std::collections::HashSet<(bool, &str)> = Default::default();
    for a in db {
        by_key
            .entry((a.union, &a.name, a.size))
            .or_default()
            .push(a);
        names.insert((a.union, &a.name));
    }
    let mut r = MemberAgreement {
        btf: btf.len(),
        ..Default::default()
    };
    let show = |m: &[(String, u32, u32)]| {
        m.iter()
            .map(|(n, o, b)| match b {
                0 => format!("{n}@{o}"),
                b => format!("{n}@{o}:{b}"),
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    for b in btf {
        let Some(cands) = by_key.get(&(b.union, b.name.as_str(), b.size)) else {
            let class = if names.contains(&(b.union, b.name.as_str())) {
                "in the db with another size"
            } else {
                "not in the db"
            };
            r.count(class, b.name.clone());
            continue;
        };
        r.compared += 1;
        r.members += b.members.len();
        if cands.iter().any(|c| c.members == b.members) {
            r.identical += 1;
            r.members_identical += b.members.len();
            continue;
        }
        let c = cands[0];
        r.members_identical += b.members.iter().filter(|m| c.members.contains(m)).count();
        let class = if c.members.is_empty() {
            "no members in the db"
        } else if c.members.len() != b.members.len() {
            "member count differs"
        } else if c.members.iter().zip(&b.members).any(|(x, y)| x.0 != y.0) {
            "member names differ"
        } else {
            "member offsets differ"
        };
        let detail = format!(
            "{}: btf `{}` db `{}`",
            b.name,
            show(&b.members),
            show(&c.members)
        );
        r.count(class, detail);
    }
    r
}
