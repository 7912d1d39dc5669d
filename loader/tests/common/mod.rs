//! Helpers shared by the loader tests: small real dbs, crafted kernel notes, store
//! snapshots.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use sigdb::{
    DbBuilder, DbFlags, FuncFlags, FunctionDesc, ModuleDesc, ModuleKind, TypeDesc, TypeKind,
};

/// A 20-byte build-id made of `b`.
pub fn bid(b: u8) -> Vec<u8> {
    (0..20).map(|i| b.wrapping_add(i)).collect()
}

/// A db with `flags`, header build-id `id`, and for each module its functions.
pub fn db_bytes(
    flags: DbFlags,
    id: &[u8],
    modules: &[(&str, ModuleKind, Vec<u8>, &[&str])],
) -> Vec<u8> {
    let mut b = DbBuilder::new(62);
    b.set_flags(flags);
    b.set_build_id(id);
    let int = b.add_type(TypeDesc::base(TypeKind::Int, "int", 4, true));
    for (name, kind, mid, funcs) in modules {
        let m = b.add_module(ModuleDesc {
            name: name.to_string(),
            kind: *kind,
            build_id: mid.clone(),
            base: 0,
        });
        for (i, f) in funcs.iter().enumerate() {
            b.add_function(FunctionDesc {
                module: m,
                addr: 0x1000 + 0x100 * i as u64,
                size: 0x40,
                name: f.to_string(),
                symbol: None,
                ret: int,
                params: Vec::new(),
                flags: FuncFlags::empty(),
            });
        }
    }
    b.finish().expect("builds")
}

/// A kernel base db (vmlinux) for kernel `id` with functions `funcs`.
pub fn kernel_db(id: &[u8], funcs: &[&str]) -> Vec<u8> {
    db_bytes(
        DbFlags::KERNEL,
        id,
        &[("vmlinux", ModuleKind::Kernel, id.to_vec(), funcs)],
    )
}

/// A module-only db for kernel `kernel_id` holding `modules` (name, functions).
pub fn modules_db(kernel_id: &[u8], modules: &[(&str, &[&str])]) -> Vec<u8> {
    let mods: Vec<_> = modules
        .iter()
        .enumerate()
        .map(|(i, (n, f))| (*n, ModuleKind::KernelModule, bid(0xa0 + i as u8), *f))
        .collect();
    db_bytes(DbFlags::KERNEL | DbFlags::MODULES_ONLY, kernel_id, &mods)
}

/// A user-space db for a binary with build-id `id`.
pub fn user_db(id: &[u8], funcs: &[&str]) -> Vec<u8> {
    db_bytes(
        DbFlags::empty(),
        id,
        &[("prog", ModuleKind::Executable, id.to_vec(), funcs)],
    )
}

/// ELF notes as the kernel exposes them: a `Linux` note, the GNU build-id, a `Xen` note.
pub fn notes_bytes(id: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut note = |name: &[u8], ty: u32, desc: &[u8]| {
        out.extend_from_slice(&(name.len() as u32).to_ne_bytes());
        out.extend_from_slice(&(desc.len() as u32).to_ne_bytes());
        out.extend_from_slice(&ty.to_ne_bytes());
        out.extend_from_slice(name);
        while out.len() % 4 != 0 {
            out.push(0);
        }
        out.extend_from_slice(desc);
        while out.len() % 4 != 0 {
            out.push(0);
        }
    };
    note(b"Linux\0", 6, b"6.1.0\0");
    note(b"GNU\0", 3, id);
    note(b"Xen\0", 18, &[0, 0, 0, 0, 0, 0, 0, 0x80]);
    out
}

/// Write a notes file for a running kernel with build-id `id`.
pub fn write_notes(dir: &Path, id: &[u8]) -> PathBuf {
    let p = dir.join("notes");
    std::fs::write(&p, notes_bytes(id)).unwrap();
    p
}

/// Write `bytes` to `dir/name`.
pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Everything under `root` (not following symlinks): path → (mode, contents or link).
pub fn snapshot(root: &Path) -> BTreeMap<PathBuf, (u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    fn walk(p: &Path, out: &mut BTreeMap<PathBuf, (u32, Vec<u8>)>) {
        let Ok(m) = std::fs::symlink_metadata(p) else {
            return;
        };
        let content = if m.file_type().is_symlink() {
            std::fs::read_link(p)
                .unwrap()
                .into_os_string()
                .into_encoded_bytes()
        } else if m.is_file() {
            std::fs::read(p).unwrap()
        } else {
            Vec::new()
        };
        out.insert(p.to_path_buf(), (m.mode(), content));
        if m.is_dir() {
            for e in std::fs::read_dir(p).unwrap() {
                walk(&e.unwrap().path(), out);
            }
        }
    }
    walk(root, &mut out);
    out
}

/// Whether `prog` runs (`prog --version`).
pub fn have(prog: &str) -> bool {
    std::process::Command::new(prog)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}
