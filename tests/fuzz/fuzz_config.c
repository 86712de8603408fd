// SPDX-License-Identifier: GPL-2.0-only
/*
 * config_load() on arbitrary file contents (through a memfd). It must
 * never crash or leak; a configuration it accepts must survive
 * config_dump() and a reload unchanged.
 */
#include "../../rackd/core/config.c"
#include "../../rackd/io/log.c"
#include "../../common/addr.c"
#include "fuzz.h"

#include <sys/mman.h>
#include <unistd.h>

struct memfile {
	int fd;
	char path[32];
};

static void memfile_write(struct memfile *m, const void *data, size_t size)
{
	if (m->fd <= 0) {
		m->fd = memfd_create("racks.conf", MFD_CLOEXEC);
		if (m->fd < 0)
			abort();
		snprintf(m->path, sizeof(m->path), "/proc/self/fd/%d", m->fd);
	}
	if (ftruncate(m->fd, 0) ||
	    (size && pwrite(m->fd, data, size, 0) != (ssize_t)size))
		abort();
}

static struct config *load(struct memfile *m, const void *data, size_t size,
			   char *err, size_t errlen)
{
	struct config *cfg = NULL;
	bool missing = true;

	memfile_write(m, data, size);
	err[0] = '\0';
	int ret = config_load(m->path, &cfg, &missing, err, errlen);

	INVARIANT(!missing);
	INVARIANT(ret == 0 ? cfg != NULL : cfg == NULL && err[0] != '\0');
	return cfg;
}

static bool config_equal(const struct config *a, const struct config *b)
{
	if (a->queue_num != b->queue_num || a->queue_mode != b->queue_mode ||
	    a->queue_maxlen != b->queue_maxlen || a->mark != b->mark ||
	    a->all_ports != b->all_ports || a->nports != b->nports ||
	    a->nexclude != b->nexclude ||
	    a->syn_timeout_ms != b->syn_timeout_ms ||
	    a->sweep_interval_ms != b->sweep_interval_ms ||
	    a->max_connections != b->max_connections || a->debug != b->debug)
		return false;
	for (size_t i = 0; i < a->nports; i++)
		if (a->ports[i].first != b->ports[i].first ||
		    a->ports[i].last != b->ports[i].last)
			return false;
	for (size_t i = 0; i < a->nexclude; i++)
		if (a->exclude[i].len != b->exclude[i].len ||
		    !addr_equal(&a->exclude[i].addr, &b->exclude[i].addr))
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct memfile in, out;
	char err[512], *text = NULL;
	size_t len = 0;
	struct config *cfg = load(&in, data, size, err, sizeof(err));

	if (!cfg)
		return 0;
	INVARIANT(cfg->all_ports || cfg->nports > 0);
	INVARIANT(!(cfg->all_ports && cfg->nports));
	for (size_t i = 0; i < cfg->nports; i++)
		INVARIANT(cfg->ports[i].first >= 1 &&
			  cfg->ports[i].first <= cfg->ports[i].last);
	INVARIANT(cfg->syn_timeout_ms >= 1000 && cfg->sweep_interval_ms >= 100);

	FILE *f = open_memstream(&text, &len);

	if (!f)
		abort();
	config_dump(cfg, f);
	fclose(f);
	/* Whatever loads, dumps to a file that loads to the same config. */
	struct config *back = load(&out, text, len, err, sizeof(err));

	if (!back)
		fprintf(stderr, "dump does not reload: %s\n%s", err, text);
	INVARIANT(back && config_equal(cfg, back));
	config_free(back);
	free(text);
	config_free(cfg);
	return 0;
}
