//! `--deref` with the function_graph engine: the probe event's fetches for a function's
//! struct pointer, and its line (`/* d_do_sys_openat2: (…) q0_0=… d0={…} */`) shown as
//! the struct in place of the pointer, whichever side of the call's line it comes; a
//! `NULL` pointer shows as the parameter alone does. Output parameters: the exit event's
//! fetches through the entry's arguments, and its line shown in the return comment.

use std::rc::Rc;

use dcg_calls::decode::{Decoder, Options};
use dcg_dbset::DbSet;
use dcg_ktrace::deref_events::{deref_fetches, out_fetches, DerefEvent, OutEvent};
use dcg_ktrace::derefs::KernelDerefs;
use dcg_live::options::DerefRequest;
use sigdb::{
    Db, DbBuilder, FuncFlags, FunctionDesc, Location, MemberDesc, ModuleDesc, ModuleKind,
    ParamDesc, TypeDesc, TypeKind,
};

/// A kernel db with `struct open_how { u64 flags, mode, resolve; }` and
/// `int do_sys_openat2(int dfd, struct open_how *how)`.
fn db() -> Db {
    let mut b = DbBuilder::new(62);
    let m = b.add_module(ModuleDesc {
        name: "vmlinux".into(),
        kind: ModuleKind::Kernel,
        build_id: vec![],
        base: 0xffff_ffff_8100_0000,
    });
    let int = b.add_type(TypeDesc::base(TypeKind::Int, "int", 4, true));
    let u64t = b.add_type(TypeDesc::base(TypeKind::Int, "u64", 8, false));
    let how = b.add_type(TypeDesc::aggregate(TypeKind::Struct, "open_how", 24));
    let members = ["flags", "mode", "resolve"]
        .iter()
        .enumerate()
        .map(|(i, name)| MemberDesc {
            name: (*name).into(),
            ty: u64t,
            bit_offset: 64 * i as u64,
            bit_size: 0,
        })
        .collect();
    b.set_members(how, members);
    let how_ptr = b.add_type(TypeDesc::pointer(how, 8));
    let int_ptr = b.add_type(TypeDesc::pointer(int, 8));
    let p = |name: &str, ty, r| ParamDesc {
        name: name.into(),
        ty,
        loc: Location::Reg(r),
    };
    b.add_function(FunctionDesc {
        module: m,
        addr: 0xffffffff81300000,
        size: 0xe0,
        name: "do_sys_openat2".into(),
        symbol: None,
        ret: int,
        // rdi, rsi (DWARF registers 5 and 4).
        params: vec![p("dfd", int, 5), p("how", how_ptr, 4)],
        flags: FuncFlags::empty(),
    });
    // int do_pipe2(int *fildes, int flags), and one whose output is on the stack.
    b.add_function(FunctionDesc {
        module: m,
        addr: 0xffffffff81310000,
        size: 0x80,
        name: "do_pipe2".into(),
        symbol: None,
        ret: int,
        params: vec![p("fildes", int_ptr, 5), p("flags", int, 4)],
        flags: FuncFlags::empty(),
    });
    Db::from_bytes(b.finish().unwrap()).unwrap()
}

fn decode(set: &DbSet, lines: &str) -> String {
    let request = [DerefRequest::Members { depth: 1, cap: 512 }];
    let plan = KernelDerefs::plan(&request, set, ["do_sys_openat2", "do_pipe2"]);
    let fd = Rc::clone(&plan.by_func["do_sys_openat2"]);
    let (fetches, items) = deref_fetches(&fd, false);
    assert_eq!(fetches, ["q0_0=%si:x64", "d0=+0(%si):x64[3]"]);
    let outs = Rc::clone(&plan.outs["do_pipe2"]);
    assert_eq!(out_fetches(&outs), ["q0=$arg1:x64", "o0=+0($arg1):u32"]);
    let mut dec = Decoder::new(
        set,
        Options {
            hide_probe_events: true,
            collapse_empty: true,
            ..Options::default()
        },
    );
    let event = DerefEvent { reads: fd, items };
    dec.read_event("d_do_sys_openat2", Box::new(event));
    dec.read_event("o_do_pipe2", Box::new(OutEvent { outs }));
    let mut out = Vec::new();
    for l in lines.lines() {
        dec.decode_line(l, &mut out).unwrap();
    }
    dec.finish(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn the_struct_replaces_its_pointer() {
    let set = DbSet::new(vec![db()]);
    let event = " 0)               |  /* d_do_sys_openat2: (do_sys_openat2+0x4/0xe0) \
                 q0_0=0xff11000000001000 d0={0x8241,0x1a0,0x0} */\n";
    let call = " 0)               |  do_sys_openat2(dfd=-100, how=0xff11000000001000) {\n";
    let rest = " 0)   1.000 us    |    putname();\n 0)  20.000 us    |  }\n";
    let want = "do_sys_openat2(dfd=-100, how=(struct open_how *)0xff11000000001000{flags=33345, \
                mode=416, resolve=0}) {";
    for input in [
        format!("{event}{call}{rest}"),
        format!("{call}{event}{rest}"),
    ] {
        let text = decode(&set, &input);
        assert!(text.contains(want), "{text}");
        assert!(!text.contains("d_do_sys_openat2"), "{text}");
    }
    // A kernel whose function_graph prints no arguments: they come from an entry probe
    // event, after the struct's (its probe was created after the entry probe).
    let bare = " 0)               |  do_sys_openat2() {\n";
    let args = " 0)               |  /* a_do_sys_openat2: (do_sys_openat2+0x4/0xe0) \
                dfd=0xffffff9c how=0xff11000000001000 */\n";
    let text = decode(&set, &format!("{bare}{event}{args}{rest}"));
    assert!(text.contains(want), "{text}");
    // A NULL pointer: nothing read, shown as the argument alone.
    let null = event.replace(
        "q0_0=0xff11000000001000 d0={0x8241,0x1a0,0x0}",
        "q0_0=0x0 d0={0x0,0x0,0x0}",
    );
    let call0 = call.replace("how=0xff11000000001000", "how=0x0");
    let text = decode(&set, &format!("{call0}{null}{rest}"));
    assert!(
        text.contains("do_sys_openat2(dfd=-100, how=NULL) {"),
        "{text}"
    );
}

#[test]
fn outputs_are_read_at_the_return() {
    let set = DbSet::new(vec![db()]);
    let call = " 0)               |  do_pipe2(fildes=0x7ffc00001000, flags=0) {\n";
    let inner = " 0)   1.000 us    |    create_pipe_files();\n";
    let event = " 0)               |    /* o_do_pipe2: (__x64_sys_pipe2+0x1a/0x30 <- do_pipe2) \
                 q0=0x7ffc00001000 o0=0x3 */\n";
    let close = " 0)  20.000 us    |  } /* do_pipe2 ret=0 */\n";
    let text = decode(&set, &format!("{call}{inner}{event}{close}"));
    assert!(text.contains("} /* do_pipe2 ret=0 *fildes=3 */"), "{text}");
    // A leaf: the event before its one line.
    let leaf = " 0)  20.000 us    |  do_pipe2(fildes=0x7ffc00001000, flags=0); /* ret=0 */\n";
    let text = decode(&set, &format!("{event}{leaf}"));
    assert!(
        text.contains("do_pipe2(fildes=0x7ffc00001000, flags=0); /* ret=0 *fildes=3 */"),
        "{text}"
    );
    // A NULL pointer: no output shown.
    let null = event.replace("q0=0x7ffc00001000 o0=0x3", "q0=0x0 o0=0x0");
    let text = decode(&set, &format!("{call}{inner}{null}{close}"));
    assert!(text.contains("} /* do_pipe2 ret=0 */"), "{text}");
}
