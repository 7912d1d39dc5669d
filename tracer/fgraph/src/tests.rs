use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn call(line: &str) -> (Call<'_>, bool) {
    match parse_line(line) {
        Line::Entry(c) => (c, false),
        Line::Leaf(c) => (c, true),
        other => panic!("not a call: {other:?} <- {line:?}"),
    }
}

fn exit(line: &str) -> Exit<'_> {
    match parse_line(line) {
        Line::Exit(e) => e,
        other => panic!("not an exit: {other:?} <- {line:?}"),
    }
}

fn comment(line: &str) -> Comment<'_> {
    match parse_line(line) {
        Line::Comment(c) => c,
        other => panic!("not a comment: {other:?} <- {line:?}"),
    }
}

// a0.txt: no return values.
#[test]
fn a0_plain() {
    let l = " 0)               |                  tick_periodic() {";
    let (c, leaf) = call(l);
    assert!(!leaf);
    assert_eq!(c.func, "tick_periodic");
    assert_eq!(c.prefix.cpu, Some(0));
    assert_eq!(c.prefix.depth, 8);
    assert!(c.prefix.duration_column);
    assert_eq!(c.prefix.duration_ns, None);
    assert_eq!(c.args, None);
    assert_eq!(c.ret, None);
    assert_eq!(
        &l[..c.prefix.prefix_end],
        " 0)               |                  "
    );
    assert_eq!(&l[..c.prefix.indent_start], " 0)               |  ");
    assert_eq!(c.call_end, l.len());

    let (c, leaf) = call(" 0)   1.464 us    |              irq_enter_rcu();");
    assert!(leaf);
    assert_eq!(c.func, "irq_enter_rcu");
    assert_eq!(c.prefix.duration_ns, Some(1464));
    assert_eq!(c.prefix.overhead, None);
    assert_eq!(c.prefix.depth, 6);

    let e = exit(" 0)   3.042 us    |                    }");
    assert_eq!(e.func, None);
    assert_eq!(e.ret, None);
    assert_eq!(e.prefix.depth, 9);
    assert_eq!(e.prefix.duration_ns, Some(3042));

    let e = exit(" 0) # 6094.958 us |  }");
    assert_eq!(e.prefix.overhead, Some('#'));
    assert_eq!(e.prefix.duration_ns, Some(6_094_958));
    assert_eq!(e.prefix.depth, 0);

    // The 6.12 duration-tail form.
    let e = exit(" 0) + 34.600 us   |    } /* __text_poke */");
    assert_eq!(e.func, Some("__text_poke"));
    assert_eq!(e.prefix.overhead, Some('+'));
    assert_eq!(e.prefix.duration_ns, Some(34_600));
}

// a.txt: funcgraph-retval, new `ret=` style, decimal errno.
#[test]
fn a_retval() {
    let (c, leaf) = call(" 1)   0.930 us    |              _raw_spin_unlock_irqrestore(); /* ret=0xff1100000062b240 */");
    assert!(leaf);
    let r = c.ret.unwrap();
    assert_eq!(r.raw, "0xff1100000062b240");
    assert_eq!(r.value, Some(0xff11_0000_0062_b240));
    assert_eq!(r.style, RetStyle::RetEq);
    assert!(!r.is_decimal());
    assert_eq!(c.comment, Some("ret=0xff1100000062b240"));

    let e = exit(" 1) + 27.676 us   |      } /* do_getname.constprop.0 ret=0xff1100000062b240 */");
    assert_eq!(e.func, Some("do_getname.constprop.0"));
    assert_eq!(e.ret.unwrap().value, Some(0xff11_0000_0062_b240));
    assert_eq!(e.prefix.depth, 2);

    let e = exit(" 1) ! 223.758 us  |  } /* do_sys_openat2 ret=-2 */");
    let r = e.ret.unwrap();
    assert_eq!(r.value, Some(-2i64 as u64));
    assert!(r.is_decimal());
    assert_eq!(e.prefix.overhead, Some('!'));
    assert_eq!(e.prefix.duration_ns, Some(223_758));
}

// Old (6.5 to 6.11) `= X` style.
#[test]
fn old_equals_style() {
    let (c, _) = call(" 0)   0.512 us    |    kfree(); /* = 0x0 */");
    assert_eq!(c.ret.unwrap().style, RetStyle::Equals);
    assert_eq!(c.ret.unwrap().value, Some(0));
    let e = exit(" 0)   5.512 us    |  } /* do_sys_openat2 = -22 */");
    assert_eq!(e.func, Some("do_sys_openat2"));
    let r = e.ret.unwrap();
    assert_eq!(
        (r.raw, r.style, r.value),
        ("-22", RetStyle::Equals, Some(-22i64 as u64))
    );
}

// b.txt: funcgraph-retval-hex: errno in hex.
#[test]
fn b_hex() {
    let e = exit(" 1) ! 190.330 us  |  } /* do_sys_openat2 ret=0xfffffffe */");
    let r = e.ret.unwrap();
    assert_eq!(r.value, Some(0xffff_fffe));
    assert!(!r.is_decimal());
}

// c.txt / g2: retval + args + retaddr.
#[test]
fn c_args_retaddr() {
    let l = " 1)               |  do_sys_openat2(dfd=4294967196, filename=0x7ffd7fc98f96, how=0xffa000000022bf18) { /* <-__x64_sys_openat+0x60/0x80 */";
    let (c, leaf) = call(l);
    assert!(!leaf);
    assert_eq!(c.func, "do_sys_openat2");
    assert_eq!(
        c.args,
        Some("dfd=4294967196, filename=0x7ffd7fc98f96, how=0xffa000000022bf18")
    );
    let args: Vec<_> = c.arg_pairs().collect();
    assert_eq!(
        args,
        [
            ("dfd", "4294967196"),
            ("filename", "0x7ffd7fc98f96"),
            ("how", "0xffa000000022bf18")
        ]
    );
    assert_eq!(c.retaddr, Some("__x64_sys_openat+0x60/0x80"));
    assert_eq!(c.ret, None);
    assert_eq!(&l[c.call_end..], " /* <-__x64_sys_openat+0x60/0x80 */");

    let (c, leaf) = call(" 1)   1.298 us    |              _raw_spin_unlock_irqrestore(lock=0xff11000000132060, flags=0x292); /* <-___slab_alloc+0xf0/0x4f0 ret=0xff110000006269c0 */");
    assert!(leaf);
    assert_eq!(c.retaddr, Some("___slab_alloc+0xf0/0x4f0"));
    assert_eq!(c.ret.unwrap().value, Some(0xff11_0000_0062_69c0));
    assert_eq!(c.arg_pairs().count(), 2);

    let (c, _) = call(" 0)   8.922 us    |            alloc_from_pcs.constprop.0(); /* <-slab_alloc_node+0x21/0xd0 ret=0x0 */");
    assert_eq!(c.args, None);
    assert_eq!(c.ret.unwrap().value, Some(0));

    // > 6 args, variadic, structs, enums.
    let (c, _) = call(" 1)               |                    call_usermodehelper_setup(path=0xffffffff81ca7c20, argv=0xff11000002968140, envp=0xffffffff81ca7be0, gfp_mask=0xcc0, init=0x0, cleanup=0xffffffff812e2a60, ...) { /* <-__request_module+0x17a/0x270 */");
    assert_eq!(c.arg_pairs().last(), Some(("", "...")));
    let (c, _) = call(" 1)               |                  __request_module(wait=0x1, fmt=0xffffffff81960fbc, =?0x2a) { /* <-base_probe+0x2a/0x50 */");
    let a: Vec<_> = c.arg_pairs().collect();
    assert_eq!(a[2], ("", "?0x2a"));
    assert_eq!(parse_number(a[2].1), Some(0x2a));
    let (c, _) = call(" 0)   0.721 us    |          timestamp_truncate(t=(STRUCT)[0x6b0158f4:0x2b8520a8], inode=0xff11000002af6e00); /* ret=0x6b0158f4 */");
    let a: Vec<_> = c.arg_pairs().collect();
    assert_eq!(
        a,
        [
            ("t", "(STRUCT)[0x6b0158f4:0x2b8520a8]"),
            ("inode", "0xff11000002af6e00")
        ]
    );
    let (c, _) = call(
        " 0) + 11.838 us   |    housekeeping_any_cpu(type=3 [HK_TYPE_KERNEL_NOISE]); /* ret=0x0 */",
    );
    let a: Vec<_> = c.arg_pairs().collect();
    assert_eq!(a, [("type", "3 [HK_TYPE_KERNEL_NOISE]")]);
    assert_eq!(parse_number(a[0].1), Some(3));
}

// d.txt: abstime, cpu, proc, duration, overhead markers.
/// dcg's inline frames: the comment naming the container comes before the `{`.
#[test]
fn inline_frame_entry() {
    let l = " 1)               |    scale(v=4, k=3) /* inlined in first */ {";
    let (c, leaf) = call(l);
    assert!(!leaf);
    assert_eq!(c.func, "scale");
    assert_eq!(c.args, Some("v=4, k=3"));
    assert_eq!(c.comment, Some("inlined in first"));
    assert_eq!(c.ret, None);
    assert_eq!(c.call_end, l.len());
    let (c, leaf) = call(" 1)   1.000 us    |    scale(v=4, k=3); /* inlined in first */");
    assert!(leaf);
    assert_eq!(c.comment, Some("inlined in first"));
    // Not an entry: no brace after the comment.
    assert!(matches!(
        parse_line(" 1)               |    scale(v=4) /* inlined in first */"),
        Line::Other
    ));
}

#[test]
fn d_columns() {
    let l = "   12.300766 |   1)    cat-102     | + 11.509 us   |            alloc_from_pcs.constprop.0(); /* ret=0x0 */";
    let (c, leaf) = call(l);
    assert!(leaf);
    let p = c.prefix;
    assert_eq!(p.abstime, Some("12.300766"));
    assert_eq!(p.abstime_ns(), Some(12_300_766_000));
    assert_eq!(p.abstime_secs(), Some(12.300766));
    assert_eq!(p.cpu, Some(1));
    assert_eq!((p.comm, p.pid), (Some("cat"), Some(102)));
    assert_eq!(p.overhead, Some('+'));
    assert_eq!(p.duration_ns, Some(11_509));
    assert_eq!(p.depth, 5);
    assert_eq!(c.func, "alloc_from_pcs.constprop.0");

    let c = comment("   12.292456 |   0)     init-1     |               |  /* cmd: cat /proc/version (success, returns fd) */");
    assert_eq!((c.prefix.comm, c.prefix.pid), (Some("init"), Some(1)));
    assert_eq!(c.text, "cmd: cat /proc/version (success, returns fd)");
    assert_eq!(c.event, Some("cmd"));
    assert_eq!(c.probe, None);
    assert!(c.closed);

    let e =
        exit("   12.308501 |   1)    cat-103     | ! 546.992 us  |  } /* do_sys_openat2 ret=-2 */");
    assert_eq!(e.prefix.overhead, Some('!'));
    assert_eq!(e.prefix.duration_ns, Some(546_992));
    assert_eq!(e.ret.unwrap().raw, "-2");

    // Context switch block inside d.txt (no abstime on the switch line).
    assert_eq!(
        parse_line(" ------------------------------------------"),
        Line::Marker(Marker::Separator)
    );
    assert_eq!(
        parse_line(" 1)    cat-102     =>    cat-103    "),
        Line::Marker(Marker::ContextSwitch {
            cpu: Some(1),
            from: Task {
                comm: "cat",
                pid: 102
            },
            to: Task {
                comm: "cat",
                pid: 103
            },
        })
    );
    assert_eq!(parse_line(""), Line::Other);
}

// Comms with '-' and spaces; pid after the last '-'.
#[test]
fn proc_comm_with_dash_and_space() {
    let (c, _) = call(" 3)  a b-c-d-4242  |   0.100 us    |  foo();");
    assert_eq!((c.prefix.comm, c.prefix.pid), (Some("a b-c-d"), Some(4242)));
    assert_eq!(c.prefix.cpu, Some(3));
    assert_eq!(c.prefix.duration_ns, Some(100));
    assert_eq!(c.prefix.depth, 0);
    assert_eq!(
        parse_line(" 0)  kworker-4194304 =>  <idle>-0    "),
        Line::Marker(Marker::ContextSwitch {
            cpu: Some(0),
            from: Task {
                comm: "kworker",
                pid: 4_194_304
            },
            to: Task {
                comm: "<idle>",
                pid: 0
            },
        })
    );
}

// e.txt: probe events printed as comments.
#[test]
fn e_probe_comments() {
    let c = comment(" 0)               |      /* getname_ret: (do_sys_openat2+0x4f/0xd0 <- getname_flags) arg1=0xff110000006203c0 */");
    assert_eq!(c.prefix.depth, 2);
    let p = c.probe.unwrap();
    assert_eq!(p.event, "getname_ret");
    assert!(p.is_return);
    assert_eq!(p.func, Some("getname_flags"));
    assert_eq!(p.caller, Some("do_sys_openat2+0x4f/0xd0"));
    assert_eq!(
        p.fields().collect::<Vec<_>>(),
        [("arg1", "0xff110000006203c0")]
    );

    let c = comment(" 0)               |        /* filp_ret: (return_to_handler+0x0/0x50 <- do_file_open) ret=0xfffffffffffffffe */");
    let p = c.probe.unwrap();
    assert_eq!(p.caller, Some("return_to_handler+0x0/0x50"));
    assert_eq!(p.func, Some("do_file_open"));
    assert_eq!(
        p.fields().next().map(|f| parse_number(f.1)),
        Some(Some(-2i64 as u64))
    );

    let c = comment(" 0)               |  /* open_entry: (do_sys_openat2+0x0/0xd0) dfd=0xffffff9c path=\"/proc/version\" */");
    let p = c.probe.unwrap();
    assert!(!p.is_return);
    assert_eq!(p.func, Some("do_sys_openat2"));
    assert_eq!(p.caller, None);
    assert_eq!(p.location, "do_sys_openat2+0x0/0xd0");
    assert_eq!(
        p.fields().collect::<Vec<_>>(),
        [("dfd", "0xffffff9c"), ("path", "\"/proc/version\"")]
    );

    // A Debian 7.2 line.
    let c = comment(" 0)               |  /* ret_getname: (do_sys_openat2+0x5c/0xe0 <- getname_flags) arg1=0xff2fb3c501341240 */");
    assert_eq!(c.probe.unwrap().func, Some("getname_flags"));
}

// e-nop.txt: non-graph event lines.
#[test]
fn event_lines() {
    let l = "             cat-116     [001] ...1.    15.093366: open_ret: (__x64_sys_openat+0x60/0x80 <- do_sys_openat2) arg1=-2";
    let e = parse_event_line(l).unwrap();
    assert_eq!((e.comm, e.pid, e.cpu, e.tgid), ("cat", 116, 1, None));
    assert_eq!(e.flags, Some("...1."));
    assert_eq!(e.timestamp, "15.093366");
    assert_eq!(e.timestamp_ns(), Some(15_093_366_000));
    assert_eq!(e.event, Some("open_ret"));
    let p = e.probe().unwrap();
    assert!(p.is_return);
    assert_eq!(p.func, Some("do_sys_openat2"));
    assert_eq!(p.fields().collect::<Vec<_>>(), [("arg1", "-2")]);
    assert_eq!(
        &l[e.text_start..],
        "open_ret: (__x64_sys_openat+0x60/0x80 <- do_sys_openat2) arg1=-2"
    );

    let e = parse_event_line("            init-1       [000] ...2.    15.074003: tracing_mark_write: cmd: cat /proc/version (success, returns fd)").unwrap();
    assert_eq!(e.event, Some("tracing_mark_write"));
    assert_eq!(e.body, "cmd: cat /proc/version (success, returns fd)");
    assert_eq!(e.probe(), None);

    let e =
        parse_event_line("    t-8239 [000] DBZff 676.255548: check: (0x555c4e9c2190) x=1 s=\"hi\"")
            .unwrap();
    assert_eq!((e.comm, e.pid, e.flags), ("t", 8239, Some("DBZff")));
    let p = e.probe().unwrap();
    assert_eq!(p.func, Some("0x555c4e9c2190"));
    assert_eq!(
        p.fields().collect::<Vec<_>>(),
        [("x", "1"), ("s", "\"hi\"")]
    );

    let e = parse_event_line("    t-8239 [000] DBZff 676.255549: check_ret: (0x555c4e9c2069 <- 0x555c4e9c2190) ret=4294967274").unwrap();
    let p = e.probe().unwrap();
    assert_eq!(
        (p.caller, p.func, p.is_return),
        (Some("0x555c4e9c2069"), Some("0x555c4e9c2190"), true)
    );
    assert_eq!(p.fields().next(), Some(("ret", "4294967274")));

    // Function tracer, tgid column, no flags, comm with dash and space.
    let e = parse_event_line(
        "  my prog-x-77    (     70) [002]    1.000001: do_sys_openat2 <-__x64_sys_openat",
    )
    .unwrap();
    assert_eq!(
        (e.comm, e.pid, e.tgid, e.cpu, e.flags),
        ("my prog-x", 77, Some(70), 2, None)
    );
    assert_eq!(
        (e.event, e.body),
        (None, "do_sys_openat2 <-__x64_sys_openat")
    );

    assert_eq!(parse_event_line("# tracer: nop"), None);
    assert_eq!(
        parse_event_line(" 0)   1.464 us    |              irq_enter_rcu();"),
        None
    );
}

#[test]
fn quoted_fields() {
    let p = parse_probe_body("e: (f+0x0/0x10) s=\"a\" b\" n=1 t={1,2} u");
    assert_eq!(
        p,
        [("s", "\"a\" b\""), ("n", "1"), ("t", "{1,2}"), ("", "u")]
    );
}

fn parse_probe_body(text: &str) -> Vec<(&str, &str)> {
    let (ev, rest) = split_event(text).unwrap();
    event::parse_probe(ev, rest).unwrap().fields().collect()
}

// h.txt: module functions.
#[test]
fn h_modules() {
    let (c, leaf) = call(" 0) + 21.113 us   |    bm_register_write [binfmt_misc](file=0xff11000000632780, buffer=0xa806390, count=0x5, ppos=0xffa0000000013f08); /* ret=-22 */");
    assert!(leaf);
    assert_eq!(
        (c.func, c.module),
        ("bm_register_write", Some("binfmt_misc"))
    );
    assert_eq!(c.arg_pairs().count(), 4);
    assert_eq!(c.ret.unwrap().value, Some(-22i64 as u64));
    let e = exit(" 0) + 68.742 us   |    } /* bm_status_write [binfmt_misc] ret=-22 */");
    assert_eq!(
        (e.func, e.module),
        (Some("bm_status_write"), Some("binfmt_misc"))
    );
    assert_eq!(e.ret.unwrap().raw, "-22");
}

#[test]
fn markers() {
    assert_eq!(
        parse_line("# tracer: function_graph"),
        Line::Marker(Marker::Tracer("function_graph"))
    );
    assert!(matches!(
        parse_line("# CPU  DURATION                  FUNCTION CALLS"),
        Line::Marker(Marker::Header(_))
    ));
    assert_eq!(
        parse_line("##### CPU 1 buffer started ####"),
        Line::Marker(Marker::BufferStarted { cpu: 1 })
    );
    assert_eq!(
        parse_line("CPU:0 [LOST 1234 EVENTS]"),
        Line::Marker(Marker::LostEvents {
            cpu: 0,
            count: Some(1234)
        })
    );
    assert_eq!(
        parse_line("CPU:3 [LOST EVENTS]"),
        Line::Marker(Marker::LostEvents {
            cpu: 3,
            count: None
        })
    );
    assert_eq!(
        parse_line(" (Overruns: 7)"),
        Line::Marker(Marker::Overruns(7))
    );
    assert_eq!(
        parse_line(" => do_syscall_64+0x5d/0x170"),
        Line::Marker(Marker::StackEntry("do_syscall_64+0x5d/0x170"))
    );
    assert_eq!(
        parse_line(" <stack trace>"),
        Line::Marker(Marker::StackTrace)
    );
    // irq arrows, as print_graph_irq formats them.
    let Line::Marker(Marker::IrqEntry(p)) = parse_line(" 0)   ==========> |") else {
        panic!()
    };
    assert_eq!(p.cpu, Some(0));
    assert!(matches!(
        parse_line(" 1)    cat-102     |   <========== |"),
        Line::Marker(Marker::IrqExit(_))
    ));
    assert!(matches!(
        parse_line(" 0) ==========>"),
        Line::Marker(Marker::IrqEntry(_))
    ));
}

#[test]
fn other_column_sets() {
    // No columns at all (context-info off).
    let (c, _) = call("    foo() {");
    assert_eq!((c.func, c.prefix.depth, c.prefix.cpu), ("foo", 2, None));
    // cpu only, duration off: indentation after ") ".
    let (c, _) = call(" 0)     bar();");
    assert_eq!((c.prefix.depth, c.prefix.duration_column), (2, false));
    // Latency format: cpu, proc, lat flags, duration.
    let (c, _) = call(" 1)    cat-102     |  d..1. |   0.300 us    |    baz();");
    assert_eq!(
        (c.prefix.lat, c.prefix.depth, c.prefix.duration_ns),
        (Some("d..1."), 1, Some(300))
    );
    // Wide durations and other units.
    let (c, _) = call(" 0) $ 1234567 us |  qux();");
    assert_eq!(
        (c.prefix.overhead, c.prefix.duration_ns),
        (Some('$'), Some(1_234_567_000))
    );
    let (c, _) = call(" 0) * 12345.67 us |  qux();");
    assert_eq!(c.prefix.duration_ns, Some(12_345_670));
    let (c, _) = call(" 0)   1.5 ms    |  qux();");
    assert_eq!(c.prefix.duration_ns, Some(1_500_000));
    // Unknown symbol printed as an address, BTF-typed return proposal.
    let (c, _) = call(" 0)   1.000 us    |  0xffffffffa0003000(); /* ret=false */");
    assert_eq!(
        (c.func, c.ret.unwrap().value),
        ("0xffffffffa0003000", Some(0))
    );
    let (c, _) = call(" 0)   1.000 us    |  f(); /* ret=0x69380649(trunc) */");
    assert_eq!(c.ret.unwrap().value, Some(0x6938_0649));
    // Unterminated comment (multi-line trace_printk).
    let c = comment(" 0)               |  /* hello");
    assert!(!c.closed);
    assert_eq!(c.text, "hello");
    // Junk after a call is not a call.
    assert_eq!(parse_line(" 0)               |  foo() { junk"), Line::Other);
    assert_eq!(parse_line("random text"), Line::Other);
}

#[test]
fn wordwise_scans_match_bytewise() {
    fn check(s: &[u8]) {
        let special = |x: &u8, comma: bool| b"()[]{}".contains(x) || (comma && *x == b',');
        for i in 0..=s.len() + 1 {
            let want = (i..s.len())
                .find(|&k| s[k] != b' ')
                .unwrap_or(s.len().max(i));
            assert_eq!(skip_sp(s, i), want, "{s:?} {i}");
            for comma in [false, true] {
                let want = (i..s.len())
                    .find(|&k| special(&s[k], comma))
                    .unwrap_or(s.len());
                assert_eq!(find_special(s, i, comma), want, "{s:?} {i}");
            }
            for e in i..=s.len() {
                let want = (i..e).rev().find(|&k| s[k] != b' ').map_or(i, |k| k + 1);
                assert_eq!(rskip_sp(s, i, e), want, "{s:?} {i} {e}");
                for c in [b' ', b'|', b'x', 0x80] {
                    let want = (i..e).find(|&k| s[k] == c);
                    assert_eq!(find_byte(s, i, e, c), want, "{s:?} {i} {e}");
                }
            }
        }
    }
    // Every byte value at every position of a run of spaces.
    for c in 0..=255u8 {
        for p in 0..12 {
            let mut s = b" ".repeat(12);
            s[p] = c;
            check(&s);
        }
    }
    // Random mixes.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..3000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = (x % 40) as usize;
        let s: Vec<u8> = (0..len)
            .map(|k| b"  ||x(),[]{}\xff "[((x >> (k % 60)) % 14) as usize])
            .collect();
        check(&s);
    }
}

#[test]
fn numbers() {
    assert_eq!(parse_number("0x0"), Some(0));
    assert_eq!(parse_number("0xffffffffffffffff"), Some(u64::MAX));
    assert_eq!(parse_number("0x1ffffffffffffffff"), None);
    assert_eq!(parse_number("-4095"), Some((-4095i64) as u64));
    assert_eq!(parse_number("4294967196"), Some(4_294_967_196));
    assert_eq!(parse_number("12abc"), None);
    assert_eq!(parse_number("x"), None);
    assert_eq!(parse_number(""), None);
    assert_eq!(parse_number("-"), None);
    // Against the standard library, around the eight-digits-at-a-time steps.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for n in 0..20_000u32 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let v = x >> (x % 64);
        let zeros = "0".repeat((n % 4) as usize);
        for text in [
            format!("0x{zeros}{v:x}"),
            format!("0X{zeros}{v:X}"),
            format!("0x{zeros}{v:x}{:x}", n % 16),
            format!("0x{zeros}{v:x}g"),
            format!("0x{zeros}{v:x}, x"),
            format!("?0x{v:x}"),
            format!("-0x{v:x}"),
        ] {
            let hex = text.trim_start_matches(['?', '-']);
            let digits: String = hex[2..]
                .chars()
                .take_while(char::is_ascii_hexdigit)
                .collect();
            let rest = &hex[2 + digits.len()..];
            let want = u64::from_str_radix(&digits, 16)
                .ok()
                .filter(|_| !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
                .map(|v| {
                    if text.contains('-') {
                        v.wrapping_neg()
                    } else {
                        v
                    }
                });
            assert_eq!(parse_number(&text), want, "{text}");
        }
    }
    for c in 0..=255u8 {
        let w = u64::from_le_bytes([b'1', b'2', b'3', b'4', b'5', b'6', b'7', c]);
        let want = (c as char).to_digit(16).map(|d| 0x1234_5670 | d);
        assert_eq!(hex_word(w), want, "{c:#x}");
    }
}

// ---- every line of every capture ----

fn capture_dirs() -> Vec<PathBuf> {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data");
    vec![data.join("captures"), data.join("guest")]
}

/// A line that looks like a call: `|` followed by spaces, an identifier and `(`.
fn looks_like_call(line: &str) -> bool {
    let Some(bar) = line.rfind('|') else {
        return false;
    };
    let rest = line[bar + 1..].trim_start();
    let name_len = rest
        .bytes()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'.')
        .count();
    name_len > 0 && rest.as_bytes().get(name_len) == Some(&b'(')
}

fn kind(l: &Line<'_>) -> &'static str {
    match l {
        Line::Entry(_) => "entry",
        Line::Leaf(_) => "leaf",
        Line::Exit(_) => "exit",
        Line::Comment(c) if c.probe.is_some() => "comment/probe",
        Line::Comment(_) => "comment",
        Line::Marker(Marker::ContextSwitch { .. }) => "marker/ctxsw",
        Line::Marker(Marker::Separator) => "marker/separator",
        Line::Marker(Marker::Header(_) | Marker::Tracer(_)) => "marker/header",
        Line::Marker(Marker::IrqEntry(_) | Marker::IrqExit(_)) => "marker/irq",
        Line::Marker(_) => "marker/other",
        Line::Other => "other",
    }
}

#[test]
fn all_captures() {
    let dirs = capture_dirs();
    let mut totals: BTreeMap<String, BTreeMap<&str, usize>> = BTreeMap::new();
    for dir in dirs {
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "txt"))
            .collect();
        files.sort();
        for f in files {
            let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).into_owned();
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            let counts = totals.entry(name.clone()).or_default();
            // Guest captures hold several `=====BEGIN name=====` sections; only those
            // starting with `# tracer: function_graph` are graph output.
            let mut graph = false;
            let mut depth_stack: Vec<u32> = vec![];
            for (no, line) in text.lines().enumerate() {
                if line.starts_with("# tracer: ") {
                    graph = line == "# tracer: function_graph";
                } else if line.starts_with("=====END") || line.starts_with("=====BEGIN") {
                    graph = false;
                }
                let l = parse_line(line);
                *counts.entry(kind(&l)).or_default() += 1;
                if looks_like_call(line) {
                    assert!(
                        matches!(l, Line::Entry(_) | Line::Leaf(_)),
                        "{name}:{}: call-like line classified as {l:?}: {line:?}",
                        no + 1
                    );
                }
                if graph {
                    assert!(
                        !matches!(l, Line::Other) || line.trim().is_empty(),
                        "{name}:{}: unclassified graph line {line:?}",
                        no + 1
                    );
                }
                // Prefix offsets are in range and re-emission reproduces the line.
                if let Some(p) = l.prefix() {
                    assert!(p.indent_start <= p.prefix_end && p.prefix_end <= line.len());
                    assert!(line[p.indent_start..p.prefix_end]
                        .bytes()
                        .all(|c| c == b' '));
                }
                // Within one task, entry depth + 1 == depth of the following lines; sanity
                // check that exits match the depth of their entries on single-CPU runs.
                match l {
                    Line::Entry(c) => depth_stack.push(c.prefix.depth),
                    Line::Exit(e) => {
                        if let Some(d) = depth_stack.pop() {
                            if e.prefix.cpu.is_some() && name.starts_with('g') {
                                assert_eq!(d, e.prefix.depth, "{name}:{}", no + 1);
                            }
                        }
                    }
                    _ => {}
                }
                let _ = parse_event_line(line);
            }
            if name == "e-nop.txt" {
                let n = text.lines().filter_map(parse_event_line).count();
                let probes = text
                    .lines()
                    .filter_map(parse_event_line)
                    .filter(|e| e.probe().is_some())
                    .count();
                assert_eq!((n, probes), (24, 21));
            }
        }
    }
    for (name, counts) in &totals {
        eprintln!("{name}: {counts:?}");
    }
    let get = |f: &str, k: &str| totals.get(f).and_then(|c| c.get(k)).copied().unwrap_or(0);
    for f in [
        "a0.txt",
        "a.txt",
        "b.txt",
        "c.txt",
        "d.txt",
        "e.txt",
        "g-text.txt",
        "g2-text.txt",
        "h.txt",
    ] {
        if !totals.contains_key(f) {
            continue;
        }
        assert!(get(f, "entry") > 10, "{f}");
        assert!(get(f, "leaf") > 10, "{f}");
        assert!(get(f, "exit") > 10, "{f}");
        assert!(get(f, "comment") > 0, "{f}");
        assert_eq!(get(f, "marker/header"), 4, "{f}");
        assert_eq!(
            get(f, "marker/separator"),
            2 * get(f, "marker/ctxsw"),
            "{f}"
        );
        // Every entry has an exit in these captures (give or take a few at the edges).
        assert!(get(f, "entry").abs_diff(get(f, "exit")) <= 12, "{f}");
    }
    if totals.contains_key("e.txt") {
        assert_eq!(get("e.txt", "comment/probe"), 21);
    }
    if totals.contains_key("a0.txt") {
        assert_eq!(get("a0.txt", "marker/ctxsw"), 9);
    }
    if totals.contains_key("testkernel-probe.txt") {
        assert!(get("testkernel-probe.txt", "comment/probe") >= 4);
        assert!(get("testkernel-probe.txt", "entry") > 100);
    }
}

// Exact retval/column facts per capture.
#[test]
fn capture_facts() {
    let dir = match capture_dirs().into_iter().next() {
        Some(d) if d.join("a.txt").is_file() => d,
        _ => return,
    };
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    // a0: no ret anywhere; a/b/c: all `ret=` style; b never decimal.
    for (f, want_ret, allow_dec) in [
        ("a0.txt", false, false),
        ("a.txt", true, true),
        ("b.txt", true, false),
        ("c.txt", true, true),
    ] {
        let text = read(f);
        let mut rets = 0;
        let mut dec = 0;
        for line in text.lines() {
            let ret = match parse_line(line) {
                Line::Leaf(c) => c.ret,
                Line::Exit(e) => e.ret,
                _ => None,
            };
            if let Some(r) = ret {
                rets += 1;
                assert_eq!(r.style, RetStyle::RetEq);
                assert!(r.value.is_some(), "{line}");
                if r.is_decimal() {
                    dec += 1;
                    // Decimal only for errno values.
                    assert!((r.value.unwrap() as i64) < 0 && (r.value.unwrap() as i64) >= -4095);
                }
            }
        }
        assert_eq!(rets > 0, want_ret, "{f}");
        assert_eq!(dec > 0, allow_dec, "{f}");
    }
    // c: every entry has a retaddr; d: every call line has comm and abstime.
    for line in read("c.txt").lines() {
        if let Line::Entry(c) = parse_line(line) {
            assert!(c.retaddr.is_some(), "{line}");
        }
    }
    for line in read("d.txt").lines() {
        if let Line::Entry(c) | Line::Leaf(c) = parse_line(line) {
            assert!(
                c.prefix.abstime.is_some() && c.prefix.comm.is_some() && c.prefix.cpu.is_some()
            );
        }
    }
}

/// Throughput of `parse_line` on a.txt; run with
/// `cargo test --release -p tracer fgraph::tests::throughput -- --ignored --nocapture`.
#[test]
#[ignore]
fn throughput() {
    let Some(dir) = capture_dirs().into_iter().next() else {
        return;
    };
    let text = std::fs::read_to_string(dir.join("a.txt")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let reps: usize = std::env::var("DCG_REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1000);
    // CPU time of this thread (the machine may be shared), from schedstat.
    let cpu_ns = || {
        std::fs::read_to_string("/proc/thread-self/schedstat")
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
    };
    let c0 = cpu_ns();
    let t = std::time::Instant::now();
    let mut acc = 0u64;
    for _ in 0..reps {
        for l in &lines {
            acc += match std::hint::black_box(parse_line(l)) {
                Line::Entry(c) | Line::Leaf(c) => {
                    u64::from(c.prefix.depth) + (c.ret.and_then(|r| r.value).unwrap_or(0) & 1)
                }
                Line::Exit(e) => e.prefix.duration_ns.unwrap_or(0) & 1,
                _ => 1,
            };
        }
    }
    let dt = t.elapsed().as_secs_f64();
    let cpu = match (c0, cpu_ns()) {
        (Some(a), Some(b)) => (b - a) as f64 / 1e9,
        _ => dt,
    };
    let n = (lines.len() * reps) as f64;
    eprintln!(
        "parse_line: {:.2} M lines/s ({:.0} MB/s) per CPU second; wall {:.2} M lines/s ({acc})",
        n / cpu / 1e6,
        (text.len() * reps) as f64 / cpu / 1e6,
        n / dt / 1e6,
    );
}

// ---- property tests ----

/// Formats the kernel's duration column exactly like print_graph_duration.
fn fmt_duration(ns: u64, overhead: bool) -> (String, u64, Option<char>) {
    let mark = [
        (1_000_000_000u64, '$'),
        (100_000_000, '@'),
        (10_000_000, '*'),
        (1_000_000, '#'),
        (100_000, '!'),
        (10_000, '+'),
    ]
    .iter()
    .find(|(t, _)| ns > *t)
    .map(|m| m.1);
    let mut s = String::new();
    if overhead {
        s.push(mark.unwrap_or(' '));
        s.push(' ');
    } else {
        s.push_str("  ");
    }
    let us = ns / 1000;
    let rem = ns % 1000;
    let us_str = us.to_string();
    let mut len = us_str.len();
    s.push_str(&us_str);
    let mut shown = us * 1000;
    if len < 7 {
        let digits = 3.min(7 - len);
        let frac = &format!("{rem:03}")[..digits];
        s.push('.');
        s.push_str(frac);
        len += digits + 1;
        shown += frac.parse::<u64>().unwrap() * 10u64.pow(3 - digits as u32);
    }
    s.push_str(" us ");
    for _ in len..8 {
        s.push(' ');
    }
    s.push_str("|  ");
    (s, shown, if overhead { mark } else { None })
}

fn fmt_proc(comm: &str, pid: u32) -> String {
    let len = comm.len() + pid.to_string().len() + 1;
    let spaces = 14usize.saturating_sub(len);
    format!(
        "{}{comm}-{pid}{}",
        " ".repeat(spaces / 2),
        " ".repeat(spaces - spaces / 2)
    )
}

#[derive(Debug, Clone)]
struct Gen {
    abstime: Option<(u64, u32)>,
    cpu: Option<u32>,
    proc_: Option<(String, u32)>,
    duration: Option<(u64, bool)>,
    depth: u32,
    func: String,
    module: Option<String>,
    args: Vec<(String, u64)>,
    kind: u8,               // 0 entry, 1 leaf, 2 exit
    ret: Option<(i64, u8)>, // value, style: 0 `= `, 1 `ret=` hex, 2 `ret=` auto
    retaddr: Option<String>,
}

fn ident() -> impl Strategy<Value = String> {
    "[a-z_][a-z0-9_]{0,20}(\\.(isra|constprop|part)\\.[0-9])?"
}

fn gen() -> impl Strategy<Value = Gen> {
    (
        (
            proptest::option::of((0u64..100_000, 0u32..1_000_000)),
            proptest::option::of(0u32..512),
            proptest::option::of(("[a-z<>/:.][a-z <>/:.-]{0,5}[a-z>.]", 0u32..5_000_000)),
            proptest::option::of((0u64..10_000_000_000_000, any::<bool>())),
            0u32..40,
        ),
        (
            ident(),
            proptest::option::of("[a-z_]{1,12}"),
            proptest::collection::vec(("[a-z_]{1,8}", any::<u64>()), 0..7),
            0u8..3,
            proptest::option::of((any::<i64>(), 0u8..3)),
            proptest::option::of(ident()),
        ),
    )
        .prop_map(
            |((abstime, cpu, proc_, duration, depth), (func, module, args, kind, ret, retaddr))| {
                Gen {
                    abstime,
                    cpu,
                    proc_,
                    duration,
                    depth,
                    func,
                    module,
                    args,
                    kind,
                    ret,
                    retaddr,
                }
            },
        )
}

fn fmt_ret(v: i64, style: u8) -> (String, RetStyle) {
    let u = v as u64;
    let auto = if (-4095..0).contains(&v) {
        v.to_string()
    } else {
        format!("{u:#x}")
    };
    match style {
        0 => (format!("= {auto}"), RetStyle::Equals),
        1 => (format!("ret={u:#x}"), RetStyle::RetEq),
        _ => (format!("ret={auto}"), RetStyle::RetEq),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn never_panics(s in "\\PC*") {
        let l = parse_line(&s);
        if let Some(p) = l.prefix() {
            prop_assert!(p.prefix_end <= s.len());
        }
        match l {
            Line::Entry(c) | Line::Leaf(c) => { let _ = c.arg_pairs().count(); }
            Line::Comment(c) => { if let Some(p) = c.probe { let _ = p.fields().count(); } }
            _ => {}
        }
        if let Some(e) = parse_event_line(&s) {
            if let Some(p) = e.probe() { let _ = p.fields().count(); }
        }
    }

    #[test]
    fn never_panics_on_line_like(s in "[ 0-9)|.a-z_(){};/*=<>\\-+!#,\\[\\]\"é]{0,120}") {
        let l = parse_line(&s);
        if let Line::Entry(c) | Line::Leaf(c) = l { let _ = c.arg_pairs().count(); }
        if let Line::Comment(c) = l { if let Some(p) = c.probe { let _ = p.fields().count(); } }
        if let Some(e) = parse_event_line(&s) { if let Some(p) = e.probe() { let _ = p.fields().count(); } }
    }

    #[test]
    fn round_trip(g in gen()) {
        let mut line = String::new();
        if let Some((s, us)) = g.abstime {
            line.push_str(&format!("{s:5}.{us:06} |  "));
        }
        if let Some(cpu) = g.cpu {
            line.push_str(&format!(" {cpu}) "));
        }
        if let Some((comm, pid)) = &g.proc_ {
            line.push_str(&fmt_proc(comm, *pid));
            line.push_str(" | ");
        }
        let mut want_dur = None;
        let mut want_mark = None;
        let leaf_or_exit = g.kind != 0;
        if let Some((ns, overhead)) = g.duration {
            if leaf_or_exit {
                let (s, shown, mark) = fmt_duration(ns, overhead);
                line.push_str(&s);
                want_dur = Some(shown);
                want_mark = mark;
            } else {
                line.push_str("              |  ");
            }
        }
        let indent_start = line.len();
        line.push_str(&" ".repeat(2 * g.depth as usize));
        let prefix_end = line.len();
        let func_full = match &g.module {
            Some(m) => format!("{} [{m}]", g.func),
            None => g.func.clone(),
        };
        let args = g.args.iter().map(|(n, v)| format!("{n}={v:#x}")).collect::<Vec<_>>().join(", ");
        let ret = g.ret.map(|(v, st)| fmt_ret(v, st));
        match g.kind {
            0 => {
                line.push_str(&format!("{func_full}({args}) {{"));
                if let Some(r) = &g.retaddr {
                    line.push_str(&format!(" /* <-{r}+0x1/0x2 */"));
                }
            }
            1 => {
                line.push_str(&format!("{func_full}({args});"));
                let mut c = vec![];
                if let Some(r) = &g.retaddr { c.push(format!("<-{r}+0x1/0x2")); }
                if let Some((r, _)) = &ret { c.push(r.clone()); }
                if !c.is_empty() { line.push_str(&format!(" /* {} */", c.join(" "))); }
            }
            _ => {
                line.push('}');
                if let Some((r, _)) = &ret {
                    line.push_str(&format!(" /* {func_full} {r} */"));
                }
            }
        }
        let l = parse_line(&line);
        let p = *l.prefix().unwrap_or_else(|| panic!("no prefix: {line:?} -> {l:?}"));
        prop_assert_eq!(p.abstime.map(|t| t.to_string()), g.abstime.map(|(s, us)| format!("{s}.{us:06}")));
        prop_assert_eq!(p.abstime_ns(), g.abstime.map(|(s, us)| s * 1_000_000_000 + u64::from(us) * 1000));
        prop_assert_eq!(p.cpu, g.cpu);
        prop_assert_eq!(p.comm, g.proc_.as_ref().map(|c| c.0.as_str()));
        prop_assert_eq!(p.pid, g.proc_.as_ref().map(|c| c.1));
        prop_assert_eq!(p.duration_ns, want_dur);
        prop_assert_eq!(p.overhead, want_mark);
        prop_assert_eq!(p.duration_column, g.duration.is_some());
        prop_assert_eq!(p.depth, g.depth);
        prop_assert_eq!(p.indent_start, indent_start);
        prop_assert_eq!(p.prefix_end, prefix_end);
        let want_value = g.ret.map(|(v, _)| v as u64);
        match (g.kind, l) {
            (0, Line::Entry(c)) | (1, Line::Leaf(c)) => {
                prop_assert_eq!(c.func, g.func.as_str());
                prop_assert_eq!(c.module, g.module.as_deref());
                let got: Vec<(String, u64)> = c.arg_pairs().map(|(n, v)| (n.to_string(), parse_number(v).unwrap())).collect();
                prop_assert_eq!(got, g.args.clone());
                prop_assert_eq!(c.retaddr.map(|r| r.to_string()), g.retaddr.as_ref().map(|r| format!("{r}+0x1/0x2")));
                if g.kind == 1 {
                    prop_assert_eq!(c.ret.and_then(|r| r.value), want_value);
                    prop_assert_eq!(c.ret.map(|r| r.style), ret.as_ref().map(|r| r.1));
                } else {
                    prop_assert_eq!(c.ret, None);
                }
            }
            (2, Line::Exit(e)) => {
                prop_assert_eq!(e.func, g.ret.map(|_| g.func.as_str()));
                prop_assert_eq!(e.module, g.ret.and(g.module.as_deref()));
                prop_assert_eq!(e.ret.and_then(|r| r.value), want_value);
            }
            (k, l) => prop_assert!(false, "kind {} parsed as {:?} from {:?}", k, l, line),
        }
    }
}
