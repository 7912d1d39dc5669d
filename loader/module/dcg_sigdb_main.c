// SPDX-License-Identifier: GPL-2.0
/*
 * dcg_sigdb: a dcg signature database carried by a module, like config.gz.
 *
 * The db is embedded by dcg_sigdb_blob.S (between dcg_sigdb_start and
 * dcg_sigdb_end) and exposed read-only as /sys/kernel/dcg/DCG_SIGDB_NAME,
 * the way BTF is exposed as /sys/kernel/btf/vmlinux. Nothing else.
 */
#include <linux/init.h>
#include <linux/kobject.h>
#include <linux/module.h>
#include <linux/sysfs.h>

#include "dcg_sigdb.h"

#ifndef DCG_SIGDB_NAME
#define DCG_SIGDB_NAME vmlinux
#endif

static struct kobject *dcg_kobj;

static struct bin_attribute dcg_sigdb_attr =
	__BIN_ATTR_SIMPLE_RO(DCG_SIGDB_NAME, 0444);

static int __init dcg_sigdb_init(void)
{
	int err;

	dcg_kobj = kobject_create_and_add("dcg", kernel_kobj);
	if (!dcg_kobj)
		return -ENOMEM;

	dcg_sigdb_attr.private = dcg_sigdb_start;
	dcg_sigdb_attr.size = dcg_sigdb_end - dcg_sigdb_start;
	err = sysfs_create_bin_file(dcg_kobj, &dcg_sigdb_attr);
	if (err)
		kobject_put(dcg_kobj);
	return err;
}

static void __exit dcg_sigdb_exit(void)
{
	sysfs_remove_bin_file(dcg_kobj, &dcg_sigdb_attr);
	kobject_put(dcg_kobj);
}

module_init(dcg_sigdb_init);
module_exit(dcg_sigdb_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("dcg function signature database, read-only in /sys/kernel/dcg");
