/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The signature db itself, sigdb.bin beside this file, in its own read-only
 * section (the one `dcg load` validates before inserting the module).
 */
	.section .dcg_sigdb, "a"
	.balign 8
	.globl dcg_sigdb_start
dcg_sigdb_start:
	.incbin "sigdb.bin"
	.globl dcg_sigdb_end
dcg_sigdb_end:
	.previous
