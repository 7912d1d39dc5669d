//! Inline frames in a flat call tree (the BPF engine's): calls placed under the inlined
//! copies their call sites lie in, a probe on a copy's first instruction opening its
//! frame with arguments read where the db says, a second run of the copy (a loop), and
//! error origins passing through inline frames, and a copy of a function inlined into
//! its own body that is not a frame. The db has the shape dwarfscan gives
//! `__x64_sys_pidfd_open` on Debian 7.2 (nested copies, one parameter in a callee-saved
//! register, one a constant).

mod common;

use dcg_calls::funcs::FuncTable;
use dcg_calls::sink::{Sinks, Task};
use dcg_calls::tree::{ArgsIn, CallTree, CodeSite, Entry, Exit, RetIn, Shape};
use dcg_dbset::DbSet;
use sigdb::{
    Db, DbBuilder, FuncFlags, FunctionDesc, InstanceDesc, Location, ModuleDesc, ModuleKind,
    ParamDesc, TypeDesc, TypeKind,
};

const OUTER: u64 = 0xffffffff81001000;

fn db() -> Db {
    let mut b = DbBuilder::new(62);
    let m = b.add_module(ModuleDesc {
        name: "vmlinux".into(),
        kind: ModuleKind::Kernel,
        build_id: vec![],
        base: 0xffffffff81000000,
    });
    let int = b.add_type(TypeDesc::base(TypeKind::Int, "int", 4, true));
    let uint = b.add_type(TypeDesc::base(TypeKind::Int, "unsigned int", 4, false));
    let func = |b: &mut DbBuilder, name: &str, addr: u64, params: Vec<ParamDesc>| {
        b.add_function(FunctionDesc {
            module: m,
            addr,
            size: if addr == 0 { 0 } else { 0x100 },
            name: name.into(),
            symbol: None,
            ret: int,
            params,
            flags: if addr == 0 {
                FuncFlags::INLINE_ONLY
            } else {
                FuncFlags::empty()
            },
        })
    };
    let p = |name: &str, ty| ParamDesc {
        name: name.into(),
        ty,
        loc: Location::Unknown,
    };
    let outer = func(&mut b, "outer", OUTER, vec![p("regs", uint)]);
    let wrapper = func(&mut b, "wrapper", 0, vec![]);
    let create = func(&mut b, "create", 0, vec![p("fd", int), p("flags", uint)]);
    for (name, addr) in [
        ("prepare", 0xffffffff81002000),
        ("install", 0xffffffff81003000),
    ] {
        func(&mut b, name, addr, vec![]);
    }
    func(&mut b, "put", 0xffffffff81004000, vec![]);
    let w = b.add_instance(InstanceDesc {
        callee: wrapper,
        caller: outer,
        parent: None,
        ranges: vec![(OUTER + 0x10, OUTER + 0x80)],
        entry_pc: OUTER + 0x10,
        call_file: "kernel/pid.c".into(),
        call_line: 697,
        params: vec![],
    });
    b.add_instance(InstanceDesc {
        callee: create,
        caller: outer,
        parent: Some(w),
        ranges: vec![(OUTER + 0x20, OUTER + 0x40), (OUTER + 0x50, OUTER + 0x58)],
        entry_pc: OUTER + 0x20,
        call_file: "kernel/pid.c".into(),
        call_line: 712,
        // fd in rbx (DWARF 3), flags a constant.
        params: vec![Location::Reg(3), Location::Const(0)],
    });
    // A copy of `outer` inlined into its own body (recursion the compiler inlined once),
    // holding the call of `put`: not a frame, it would only repeat `outer`.
    b.add_instance(InstanceDesc {
        callee: outer,
        caller: outer,
        parent: None,
        ranges: vec![(OUTER + 0x88, OUTER + 0xa0)],
        entry_pc: OUTER + 0x88,
        call_file: "kernel/pid.c".into(),
        call_line: 730,
        params: vec![],
    });
    Db::from_bytes(b.finish().unwrap()).unwrap()
}

struct Run<'a> {
    tree: CallTree<'a>,
    sinks: Sinks<'a>,
    out: Vec<u8>,
    t: u64,
}

fn task() -> Task<'static> {
    Task {
        key: 7,
        pid: Some(7),
        comm: Some("t"),
        cpu: Some(0),
        process: None,
    }
}

impl<'a> Run<'a> {
    fn enter(&mut self, name: &'static str, site: Option<u64>) {
        self.t += 10;
        let func = self.tree.funcs.intern(name, None);
        let outer = self.tree.funcs.intern("outer", None);
        let e = Entry {
            task: task(),
            depth: 0,
            func,
            name,
            module: None,
            args: ArgsIn::None,
            ret: None,
            leaf: false,
            time_ns: Some(self.t),
            duration_ns: None,
            callsite: None,
            site: site.map(|offset| CodeSite {
                func: outer,
                offset,
            }),
            comment: None,
            layout: None,
            ctx: None,
        };
        self.tree.enter(&e, &mut self.sinks, &mut self.out).unwrap();
    }

    fn exit(&mut self, name: &'static str, rax: u64) {
        self.t += 10;
        let func = self.tree.funcs.intern(name, None);
        let x = Exit {
            outs: None,
            task: task(),
            depth: 0,
            func: Some(func),
            ret: Some(RetIn::Regs { rax, rdx: 0 }),
            time_ns: Some(self.t),
            duration_ns: None,
            layout: None,
        };
        self.tree.exit(&x, &mut self.sinks, &mut self.out).unwrap();
    }

    fn probe(&mut self, set: &'a DbSet, rbx: u64) {
        self.t += 10;
        let inst = set.dbs()[0]
            .instances()
            .find(|i| i.callee().is_some_and(|c| c.name() == "create"))
            .unwrap();
        let mut regs = [0u64; 16];
        regs[3] = rbx;
        self.tree
            .enter_inline(
                task(),
                inst,
                Some((&regs, &[])),
                Some(self.t),
                &mut self.sinks,
                &mut self.out,
            )
            .unwrap();
    }
}

/// The trace of one `outer` call running `create` twice (a loop), then `put` from outside
/// the copies, as text (or JSON records).
fn trace(json: bool, frames: bool) -> String {
    let set = DbSet::new(vec![db()]);
    let sinks = common::sinks(json);
    let mut tree = CallTree::new(FuncTable::new(&set), Shape::Flat, 0);
    tree.show_inline_frames(frames);
    let mut r = Run {
        tree,
        sinks,
        out: Vec::new(),
        t: 0,
    };
    r.enter("outer", None);
    for fd in [3, 4] {
        r.probe(&set, fd);
        r.enter("prepare", Some(0x25));
        r.exit("prepare", fd);
        // The return address right after a copy's last call still belongs to it.
        r.enter("install", Some(0x58));
        r.exit("install", 0);
    }
    r.enter("put", Some(0x90));
    r.exit("put", (-2i64) as u64);
    r.exit("outer", (-2i64) as u64);
    r.tree.finish(&mut r.sinks, &mut r.out).unwrap();
    String::from_utf8(r.out).unwrap()
}

#[test]
fn calls_sit_under_the_inlined_copies_they_are_made_from() {
    let text = trace(false, true);
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.split('|').nth(1).unwrap_or(l))
        .collect();
    let shape: Vec<String> = lines.iter().map(|l| l.trim_end().to_string()).collect();
    let want = [
        "  outer() {",
        "    wrapper() /* inlined in outer */ {",
        "      create(fd=3, flags=0) /* inlined in outer */ {",
        "        prepare(); /* ret=3 */",
        "        install(); /* ret=0 */",
        "      } /* create */",
        "      create(fd=4, flags=0) /* inlined in outer */ {",
        "        prepare(); /* ret=4 */",
        "        install(); /* ret=0 */",
        "      } /* create */",
        "    } /* wrapper */",
        "    put(); /* ret=-ENOENT */",
        "  } /* outer ret=-ENOENT from put */",
    ];
    assert_eq!(shape, want, "{text}");
    // Turned off: the calls sit under the function itself.
    let plain = trace(false, false);
    assert!(!plain.contains("inlined"), "{plain}");
    assert!(plain.contains("|    prepare(); /* ret=3 */"), "{plain}");
}

#[test]
fn inline_frames_are_records_with_their_site() {
    let text = trace(true, true);
    let recs: Vec<dcg_calls::saved_format::CallRecord> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by = |f: &str| recs.iter().filter(|r| r.func == f).collect::<Vec<_>>();
    let outer = by("outer")[0];
    let wrapper = by("wrapper")[0];
    let creates = by("create");
    assert_eq!(creates.len(), 2);
    assert_eq!(wrapper.parent, Some(outer.id));
    for (c, fd) in creates.iter().zip(["3", "4"]) {
        assert_eq!(c.parent, Some(wrapper.id));
        let site = c.inline.as_ref().unwrap();
        assert_eq!(
            (site.container.as_str(), site.file.as_str(), site.line),
            ("outer", "kernel/pid.c", 712)
        );
        assert_eq!(c.ret, None);
        assert_eq!(c.args[0].value, fd);
        let kids: Vec<&str> = recs
            .iter()
            .filter(|r| r.parent == Some(c.id))
            .map(|r| r.func.as_str())
            .collect();
        assert_eq!(kids, ["prepare", "install"]);
        assert!(c.duration_ns.is_some());
    }
    let put = by("put")[0];
    assert_eq!(put.parent, Some(outer.id));
    assert_eq!(put.inline, None);
    // The error's origin passes through the inline frames to the container.
    assert_eq!(outer.origin, Some(put.id));
}
