//! `--fields` with the function_graph engine: a probe event reads the members at the
//! function's entry (`/* m_do_sys_openat2: (…) p0_0=… f0=… */`) and the decoder shows them
//! after the call's arguments under their paths, rendered by their types, whether the
//! event's line comes before the call's line or after its `{`; a `NULL` pointer on the
//! way shows `?`.

use dcg_calls::decode::{Decoder, Options};
use dcg_calls::members::MemberField;
use dcg_dbset::DbSet;
use sigdb::{
    Db, DbBuilder, FuncFlags, FunctionDesc, Location, ModuleDesc, ModuleKind, ParamDesc, TypeDesc,
    TypeKind,
};

fn db() -> Db {
    let mut b = DbBuilder::new(62);
    let m = b.add_module(ModuleDesc {
        name: "vmlinux".into(),
        kind: ModuleKind::Kernel,
        build_id: vec![],
        base: 0xffff_ffff_8100_0000,
    });
    let int = b.add_type(TypeDesc::base(TypeKind::Int, "int", 4, true));
    let u64t = b.add_type(TypeDesc::base(
        TypeKind::Int,
        "unsigned long long",
        8,
        false,
    ));
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
        params: vec![p("dfd", int, 5), p("how", u64t, 4)],
        flags: FuncFlags::empty(),
    });
    Db::from_bytes(b.finish().unwrap()).unwrap()
}

fn decode(lines: &str) -> String {
    decode_as(lines, false)
}

fn decode_as(lines: &str, json: bool) -> String {
    let set = DbSet::new(vec![db()]);
    let f = set.by_name("do_sys_openat2").next().unwrap();
    let ty = |i: usize| f.params().nth(i).unwrap().ty();
    let member = |i: usize, name: &str, t, size| MemberField {
        name: name.into(),
        ty: t,
        size,
        bits: None,
        field: format!("f{i}"),
        through: vec![format!("p{i}_0")],
    };
    let mut dec = Decoder::new(
        &set,
        Options {
            hide_probe_events: true,
            collapse_empty: true,
            json,
            ..Options::default()
        },
    );
    dec.read_members(
        "m_do_sys_openat2",
        vec![
            member(0, "how->flags", ty(1), 8),
            member(1, "how->mode", ty(0), 4),
        ],
    );
    let mut out = Vec::new();
    for l in lines.lines() {
        dec.decode_line(l, &mut out).unwrap();
    }
    dec.finish(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn members_follow_the_arguments() {
    let event = " 0)               |  /* m_do_sys_openat2: (do_sys_openat2+0x4/0xe0) \
                 p0_0=0xff11000000001000 f0=0x8241 p1_0=0xff11000000001000 f1=0x1a0 */\n";
    let call = " 0)               |  do_sys_openat2(dfd=-100, how=0xff11000000001000) {\n";
    let rest = " 0)   1.000 us    |    putname();\n 0)  20.000 us    |  }\n";
    let want = "do_sys_openat2(dfd=-100, how=0xff11000000001000, how->flags=33345, \
                how->mode=416) {";
    for input in [
        format!("{event}{call}{rest}"),
        format!("{call}{event}{rest}"),
    ] {
        let text = decode(&input);
        assert!(text.contains(want), "{text}");
        assert!(!text.contains("m_do_sys_openat2"), "{text}");
    }
    // Through a NULL pointer: not read.
    let null = event.replace("p1_0=0xff11000000001000 f1=0x1a0", "p1_0=0x0 f1=0x0");
    let text = decode(&format!("{call}{null}{rest}"));
    assert!(text.contains("how->flags=33345, how->mode=?) {"), "{text}");
}

/// An interrupt's calls between the call's `{` and its event (a softirq run on the way
/// out of a timer interrupt that hit between function_graph's entry hook and the probe's):
/// the line was printed without the members, the saved call has them; the next call
/// still takes its own event's.
#[test]
fn members_after_an_interrupt_reach_the_open_call() {
    let event = |flags: &str| {
        format!(
            " 0)               |  /* m_do_sys_openat2: (do_sys_openat2+0x4/0xe0) \
             p0_0=0xff11000000001000 f0={flags} p1_0=0xff11000000001000 f1=0x1a0 */\n"
        )
    };
    let call = " 0)               |  do_sys_openat2(dfd=-100, how=0xff11000000001000) {\n";
    let irq = " 0)   0.500 us    |    run_timer_softirq();\n";
    let rest = " 0)   1.000 us    |    putname();\n 0)  20.000 us    |  }\n";
    let input = format!(
        "{call}{irq}{}{rest}{call}{}{rest}",
        event("0x8241"),
        event("0x8000")
    );
    let json = decode_as(&input, true);
    let opens: Vec<&str> = json
        .lines()
        .filter(|l| l.contains("\"do_sys_openat2\""))
        .collect();
    assert_eq!(opens.len(), 2, "{json}");
    assert!(
        opens[0].contains("33345") && opens[0].contains("how->mode"),
        "{json}"
    );
    assert!(
        opens[1].contains("32768") && !opens[1].contains("33345"),
        "{json}"
    );
}
