//! System V AMD64 parameter passing: where each parameter arrives, to tell functions
//! whose DWARF locations follow the ABI from those the compiler changed.

use sigdb::{float_format, FloatFormat, Location, TypeFlags, TypeKind, SYSV_INT_ARG_REGS};

/// DWARF register numbers of xmm0..xmm7.
const SSE_REGS: [u8; 8] = [17, 18, 19, 20, 21, 22, 23, 24];

/// The ABI class of a value, from its resolved type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgClass {
    /// In 1 or 2 integer registers.
    Integer(u8),
    /// In 1 or 2 SSE registers.
    Sse(u8),
    /// Two eightbytes, one INTEGER and one SSE: whether the first is the SSE one.
    Mixed(bool),
    /// In memory (on the stack for parameters), with its size.
    Memory(u32),
    /// Nothing (void).
    None,
}

/// Classify a resolved type of `kind`, `size`, `flags` and `name` as a parameter
/// (aggregates by the classes their flags record, see [`TypeFlags::CLASSIFIED`]; floats by
/// their format).
pub fn classify(kind: TypeKind, size: u32, flags: TypeFlags, name: &str) -> ArgClass {
    let aggregate = matches!(kind, TypeKind::Struct | TypeKind::Union);
    if aggregate && (1..=16).contains(&size) && flags.contains(TypeFlags::CLASSIFIED) {
        if flags.contains(TypeFlags::MEMORY) {
            return ArgClass::Memory(size);
        }
        let (lo, hi) = (
            flags.contains(TypeFlags::SSE_LO),
            flags.contains(TypeFlags::SSE_HI),
        );
        return match (size > 8, lo, hi) {
            (false, true, _) => ArgClass::Sse(1),
            (false, false, _) => ArgClass::Integer(1),
            (true, true, true) => ArgClass::Sse(2),
            (true, false, false) => ArgClass::Integer(2),
            (true, lo, _) => ArgClass::Mixed(lo),
        };
    }
    if kind == TypeKind::Float {
        return match float_format(size, name) {
            FloatFormat::Single | FloatFormat::Double | FloatFormat::Quad => ArgClass::Sse(1),
            FloatFormat::Complex(8) => ArgClass::Sse(1),
            FloatFormat::Complex(16) => ArgClass::Sse(2),
            // x87 values (and complex ones) go in memory.
            FloatFormat::X87 | FloatFormat::Complex(_) => ArgClass::Memory(size),
        };
    }
    classify_kind(kind, size)
}

/// Classify a return type: as a parameter, except that a `long double` (and a complex
/// one) comes back on the x87 stack (no hidden result pointer).
pub fn classify_ret(kind: TypeKind, size: u32, flags: TypeFlags, name: &str) -> ArgClass {
    match (kind, float_format(size, name)) {
        (TypeKind::Float, FloatFormat::X87 | FloatFormat::Complex(32)) => ArgClass::None,
        _ => classify(kind, size, flags, name),
    }
}

fn classify_kind(kind: TypeKind, size: u32) -> ArgClass {
    match kind {
        TypeKind::Void | TypeKind::Func => ArgClass::None,
        TypeKind::Struct | TypeKind::Union | TypeKind::Array => match size {
            0 => ArgClass::None,
            1..=8 => ArgClass::Integer(1),
            9..=16 => ArgClass::Integer(2),
            _ => ArgClass::Memory(size),
        },
        _ => match size {
            9..=16 => ArgClass::Integer(2),
            _ => ArgClass::Integer(1),
        },
    }
}

/// The entry locations the ABI assigns to parameters of the given classes; a function
/// returning `ret` in memory passes the hidden result pointer in rdi first.
pub fn expected_locations(ret: ArgClass, params: &[ArgClass]) -> Vec<Location> {
    let mut next_int = usize::from(matches!(ret, ArgClass::Memory(_)));
    let mut next_sse = 0usize;
    let mut stack = 0i32;
    let on_stack = |size: u32, stack: &mut i32| {
        let at = *stack;
        *stack += (size.max(8).div_ceil(8) * 8) as i32;
        Location::Stack(at)
    };
    params
        .iter()
        .map(|&c| match c {
            ArgClass::Integer(n) => {
                let n = usize::from(n);
                if next_int + n <= SYSV_INT_ARG_REGS.len() {
                    let r = &SYSV_INT_ARG_REGS[next_int..next_int + n];
                    next_int += n;
                    if n == 2 {
                        Location::RegPair(r[0], r[1])
                    } else {
                        Location::Reg(r[0])
                    }
                } else {
                    on_stack(8 * n as u32, &mut stack)
                }
            }
            ArgClass::Sse(n) => {
                let n = usize::from(n);
                if next_sse + n <= SSE_REGS.len() {
                    let r = &SSE_REGS[next_sse..next_sse + n];
                    next_sse += n;
                    if n == 2 {
                        Location::RegPair(r[0], r[1])
                    } else {
                        Location::Reg(r[0])
                    }
                } else {
                    on_stack(8 * n as u32, &mut stack)
                }
            }
            ArgClass::Mixed(sse_first) => {
                if next_int < SYSV_INT_ARG_REGS.len() && next_sse < SSE_REGS.len() {
                    let (i, x) = (SYSV_INT_ARG_REGS[next_int], SSE_REGS[next_sse]);
                    next_int += 1;
                    next_sse += 1;
                    if sse_first {
                        Location::RegPair(x, i)
                    } else {
                        Location::RegPair(i, x)
                    }
                } else {
                    on_stack(16, &mut stack)
                }
            }
            ArgClass::Memory(size) => on_stack(size, &mut stack),
            ArgClass::None => Location::Unknown,
        })
        .collect()
}

/// Whether a DWARF entry location agrees with the ABI's.
pub fn agrees(actual: Location, expected: Location) -> bool {
    match (actual, expected) {
        (a, e) if a == e => true,
        // A value in a register pair may be described by its first register alone.
        (Location::Reg(a), Location::RegPair(e, _)) => a == e,
        // Not a definite location at entry: nothing to disagree with (a frame slot after
        // the prologue holds what arrived where the ABI puts it).
        (
            Location::Unknown
            | Location::OptimizedOut
            | Location::Const(_)
            | Location::Frame { .. },
            _,
        ) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysv_order() {
        let int = ArgClass::Integer(1);
        let locs = expected_locations(ArgClass::Integer(1), &[int; 8]);
        assert_eq!(
            locs,
            vec![
                Location::Reg(5),
                Location::Reg(4),
                Location::Reg(1),
                Location::Reg(2),
                Location::Reg(8),
                Location::Reg(9),
                Location::Stack(0),
                Location::Stack(8),
            ]
        );
        let locs = expected_locations(
            ArgClass::Memory(24),
            &[int, ArgClass::Sse(1), ArgClass::Memory(24), int],
        );
        assert_eq!(
            locs,
            vec![
                Location::Reg(4),
                Location::Reg(17),
                Location::Stack(0),
                Location::Reg(1)
            ]
        );
        let none = TypeFlags::empty();
        let ld = "long double";
        assert_eq!(
            classify(TypeKind::Float, 16, none, ld),
            ArgClass::Memory(16)
        );
        assert_eq!(
            classify(TypeKind::Float, 16, none, "_Float128"),
            ArgClass::Sse(1)
        );
        assert_eq!(
            classify(TypeKind::Float, 16, none, "complex double"),
            ArgClass::Sse(2)
        );
        assert_eq!(
            classify(TypeKind::Struct, 16, none, "x"),
            ArgClass::Integer(2)
        );
        // long double returns on the x87 stack: no hidden pointer, rdi stays first.
        let ret = classify_ret(TypeKind::Float, 16, none, ld);
        assert_eq!(
            expected_locations(ret, &[int, int]),
            vec![Location::Reg(5), Location::Reg(4)]
        );
        // struct { double }: xmm0; struct { long; double }: rdi and xmm0; packed: memory.
        let c = TypeFlags::CLASSIFIED;
        assert_eq!(
            classify(TypeKind::Struct, 8, c | TypeFlags::SSE_LO, "sd"),
            ArgClass::Sse(1)
        );
        let mixed = classify(TypeKind::Struct, 16, c | TypeFlags::SSE_HI, "ld");
        assert_eq!(mixed, ArgClass::Mixed(false));
        let packed = classify(TypeKind::Struct, 5, c | TypeFlags::MEMORY, "pk");
        assert_eq!(
            expected_locations(ArgClass::None, &[mixed, packed, int]),
            vec![
                Location::RegPair(5, 17),
                Location::Stack(0),
                Location::Reg(4)
            ]
        );
    }
}
