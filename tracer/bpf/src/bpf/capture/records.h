// SPDX-License-Identifier: GPL-2.0
/* capture.bpf.c: the records it writes, kept in sync with dcg-bpf's records.rs.
 * Included by capture.bpf.c only. */
#ifndef DCG_CAPTURE_RECORDS_H
#define DCG_CAPTURE_RECORDS_H

#define REC_ENTRY 1
#define REC_EXIT 2
/* A record's first word: its kind (low byte), the context (second byte; entry and
 * return records) and its length in bytes (upper half), by which a batch is split. */
#define REC_LEN_SHIFT 16
#define CTX_TASK 0
#define CTX_SOFTIRQ 1
#define CTX_IRQ 2
#define CTX_NMI 3
#define CTX_SHIFT 8
#define REC_STRING 3
#define REC_STACK 4
#define REC_COMM 5
#define REC_INLINE 6
#define REC_LOSS 7
#define REC_CALLERS 8
#define REC_FIELDS 9
#define REC_DEREF 10
#define REC_OUT 11
#define STR_MAX 256
/* Words read above the return address for parameters passed on the stack. */
#define STACK_WORDS 8
/* Words read from the stack pointer up at an inlined copy's first instruction. */
#define INLINE_STACK 16
/* Return addresses of a root call's kernel stack (`--stack`): the record stays under
 * REC_MAX. */
#define CALLERS_MAX 48

/* Plan of a function: bits 0-5 say which arguments are C strings. */
#define PLAN_ROOT (1U << 8)
/* Some parameters are on the stack: a stack record follows the entry. */
#define PLAN_STACK (1U << 9)
/* Members are read behind some parameters (`--fields`): a fields record follows. */
#define PLAN_FIELDS (1U << 10)
/* Structs are read behind some pointer parameters (`--deref`): deref records follow. */
#define PLAN_DEREF (1U << 11)
/* An output parameter is read at the return (`--deref`, `--fields`; a session link
 * only): bits 12-14 its argument register + 1, bits 16-19 the bytes it points to. */
#define PLAN_OUT_SHIFT 12
#define PLAN_OUT_SIZE_SHIFT 16
/* Addresses below this are user space (x86-64, 4- and 5-level paging alike). */
#define USER_TOP 0x0100000000000000ULL

/* Kept in sync with dcg-bpf's `CallRec`, `StackRec`, `CommRec` and `StrRec`
 * (src/records.rs). A return record
 * is the first EXIT_SIZE bytes of a call_rec (no arguments). */
struct call_rec {
	__u32 kind;
	__u32 tid;
	__u64 ts;
	__u64 ip;
	__u64 a;	/* entry: the return address (call site); exit: rax */
	__u64 b;	/* exit: rdx */
	__u32 cpu;
	__u32 tgid;
	__u64 args[6];
};
#define EXIT_SIZE __builtin_offsetof(struct call_rec, args)

/* The words at the stack pointer + 8 (the first stack-passed argument) on. */
struct stack_rec {
	__u32 kind;
	__u32 tid;
	__u64 words[STACK_WORDS];
};

/* A task's name, when it starts being recorded (its /proc entry may be gone by the time
 * the records are decoded). */
struct comm_rec {
	__u32 kind;
	__u32 tid;
	char comm[16];
};

/* An inlined copy's first instruction ran (a kprobe there, its cookie naming the copy):
 * the general registers by DWARF number (rax rdx rcx rbx rsi rdi rbp rsp r8..r15) and the
 * stack words from the stack pointer up, where its parameters are. */
struct inline_rec {
	__u32 kind;
	__u32 tid;
	__u64 ts;
	__u64 cookie;
	__u32 cpu;
	__u32 pad;
	__u64 regs[16];
	__u64 stack[INLINE_STACK];
};

/* The kernel skipped the programs `n` times on this CPU while this run recorded a call
 * of `tid` (at function `ip`): what ran then (an interrupt) is missing from its tree. */
struct loss_rec {
	__u32 kind;
	__u32 tid;
	__u64 ts;
	__u64 ip;
	__u64 n;
	__u32 cpu;
	__u32 pad;
};

/* The kernel stack at a root's entry, when a tree begins (`--stack`): bpf_get_stack's
 * return addresses, innermost first (the root's own address, then its callers'), `len`
 * the bytes it filled or its error. Precedes the root's entry record. */
struct callers_rec {
	__u32 kind;
	__u32 tid;
	__s32 len;
	__u32 pad;
	__u64 ip;	/* the root's address (bpf_get_func_ip) */
	__u64 ips[CALLERS_MAX];
};

/* The members `--fields` reads at a function's entry (its `fields` entry): value i and,
 * bit i of `ok`, whether every read on its way succeeded (a NULL pointer's did not).
 * Follows the entry record. */
#define FIELDS_MAX 8
struct fields_rec {
	__u32 kind;
	__u32 tid;
	__u32 ok;
	__u32 n;
	__u64 v[FIELDS_MAX];
};

/* `--deref`: the bytes of one of a function's reads (its `derefs` entry's item `item`),
 * `len` of them read at `addr` (or the read's error). Follows the entry record. */
#define DEREF_ITEMS 8
#define DEREF_BYTES 480
struct deref_rec {
	__u32 kind;
	__u32 tid;
	__u32 item;
	__s32 len;
	__u64 addr;
	__u8 data[DEREF_BYTES];
};

/* An output parameter at a return (the pointer the entry kept in the session's cookie)
 * and the `len` bytes it points to then, or the read's error. Precedes the return
 * record. */
struct out_rec {
	__u32 kind;
	__u32 tid;
	__u64 ptr;
	__u64 value;
	__s32 len;
	__u32 pad;
};

struct str_rec {
	__u32 kind;
	__u32 tid;
	__u32 arg;
	__s32 len;
	char s[STR_MAX];
};

#endif
