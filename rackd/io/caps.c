// SPDX-License-Identifier: GPL-2.0-only
#include "caps.h"

#include <errno.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define KEEP ((1u << CAP_NET_ADMIN) | (1u << CAP_NET_RAW))

int caps_drop(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0,
	};
	/* Version 3 takes two words; both kept capabilities are below 32. */
	struct __user_cap_data_struct data[2] = {
		{ .effective = KEEP, .permitted = KEEP, .inheritable = 0 },
		{ 0 },
	};

	/* The bounding set first: dropping from it needs CAP_SETPCAP,
	 * which the capset below takes away. Capabilities this kernel does
	 * not know end the loop (EINVAL). */
	for (unsigned long cap = 0; cap < 64; cap++) {
		int in_set = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);

		if (in_set < 0)		/* past the kernel's last one */
			break;
		/* Absent already (a service manager's bounding set): there
		 * may be no CAP_SETPCAP to drop anything with, either. */
		if (!in_set || (cap < 32 && (KEEP & (1u << cap))))
			continue;
		/* Without CAP_SETPCAP (a unit whose bounding set has CAP_BPF
		 * for the start but not CAP_SETPCAP) it stays in the bounding
		 * set, harmless: the capset below empties the permitted set
		 * of it and no_new_privs keeps any exec from regaining it. */
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EPERM)
			return -errno;
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
	    errno != EINVAL)
		return -errno;
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	return 0;
}
