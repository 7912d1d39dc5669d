/* SPDX-License-Identifier: GPL-2.0 */
#ifndef DCG_SIGDB_H
#define DCG_SIGDB_H

/* The embedded db, from dcg_sigdb_blob.S. */
extern char dcg_sigdb_start[];
extern char dcg_sigdb_end[];

#endif /* DCG_SIGDB_H */
