// SPDX-License-Identifier: GPL-2.0-only
#include "offerset.h"

#define OFFERSET_NAME "offered"

void offerset_declare(FILE *f)
{
	flowset_declare(f, OFFERSET_NAME);
}

int offerset_add(struct flowset *offers, const struct endpoint *local,
		 const struct endpoint *remote)
{
	struct flowset_flow flow = { *local, *remote };

	return flowset_update(offers, OFFERSET_NAME, &flow, 1,
			      OFFERSET_TIMEOUT_MS, true);
}

int offerset_remove(struct flowset *offers, const struct endpoint *local,
		    const struct endpoint *remote)
{
	struct flowset_flow flow = { *local, *remote };

	return flowset_update(offers, OFFERSET_NAME, &flow, 1, 0, false);
}
