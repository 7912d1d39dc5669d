//! The x87 `long double` text against the C library's: for a sample of values (random
//! normals, denormals, pseudo-denormals, edges), glibc's `printf("%.21Lg")` (21 digits
//! always read back to the same 64-bit mantissa) and dcg's shortest decimal must both
//! read back to the value's bits, and dcg's may not be longer.

use std::io::Write;
use std::process::{Command, Stdio};

use dcg_render::x87;

const PROGRAM: &str = r#"#include <stdio.h>
#include <string.h>
int main(void) {
  unsigned long long m; unsigned se;
  while (scanf("%llx %x", &m, &se) == 2) {
    unsigned char b[sizeof(long double)] = {0};
    long double v;
    memcpy(b, &m, 8); b[8] = se & 0xff; b[9] = se >> 8;
    memcpy(&v, b, sizeof v);
    printf("%.21Lg\n", v);
  }
  return 0;
}
"#;

/// A small deterministic generator (xorshift64*).
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

fn significant_digits(text: &str) -> usize {
    let mantissa = text.split(['e', 'E']).next().unwrap_or("");
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    digits.trim_start_matches('0').trim_end_matches('0').len()
}

#[test]
fn shortest_reads_back_like_printf() {
    let dir = tempfile_dir();
    let src = dir.join("ld.c");
    let bin = dir.join("ld");
    std::fs::write(&src, PROGRAM).unwrap();
    let cc = Command::new("cc")
        .arg("-O1")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .status()
        .expect("cc (a C compiler) is needed for this test");
    assert!(cc.success());
    let mut values: Vec<(u64, u16)> = vec![
        (0xf424_0000_0000_031c, 0xc013),
        (0xaaaa_aaaa_aaaa_aaab, 0x3ffd),
        (0xcccc_cccc_cccc_cccd, 0x3ffb),
        (u64::MAX, 0x7ffe),
        (1 << 63, 1),
        (1, 0),
        (u64::MAX >> 1, 0),
        (1 << 63, 0), // pseudo-denormal
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..3000 {
        let m = next(&mut state);
        let r = next(&mut state);
        let se = match i % 3 {
            0 => (r as u16 % 0x7ffe) + 1,     // any normal exponent
            1 => 0x3f80 + (r as u16 % 0x100), // near 1
            _ => 0,                           // denormals
        } | ((r >> 32) as u16 & 0x8000);
        let m = if se & 0x7fff == 0 {
            m >> 1
        } else {
            m | 1 << 63
        };
        if m != 0 {
            values.push((m, se));
        }
    }
    let mut child = Command::new(&bin)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        for (m, se) in &values {
            writeln!(stdin, "{m:x} {se:x}").unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), values.len());
    for ((m, se), c) in values.iter().zip(lines) {
        // A pseudo-denormal reads back as the normal of the same value.
        let want = if se & 0x7fff == 0 && m >> 63 == 1 {
            (*m, se & 0x8000 | 1)
        } else {
            (*m, *se)
        };
        let ours = x87::shortest(*m, *se);
        assert_eq!(
            x87::parse(c).unwrap(),
            want,
            "printf {c} for {m:#x} {se:#x}"
        );
        assert_eq!(
            x87::parse(&ours).unwrap(),
            want,
            "dcg {ours} for {m:#x} {se:#x}"
        );
        assert!(
            significant_digits(&ours) <= significant_digits(c).max(1),
            "dcg {ours} longer than printf {c}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("dcg-x87-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}
