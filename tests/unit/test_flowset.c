// SPDX-License-Identifier: GPL-2.0-only
/*
 * racks' flow sets against the real kernel: each test runs in a network
 * namespace of its own (unshare, so root is needed and nothing of the
 * host's ruleset is touched), creates racks' table with two flow sets and
 * reads back with nft what flowset.c wrote: additions in chunks of many
 * flows and both families, deletions, and a deletion that meets an
 * expired element, which must still delete the others.
 */
#include "../../nft/flowset.c"

#include <nftables/libnftables.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>

#include "unit.h"

/* Run SCRIPT with nft; its output (a listing) in *OUT if asked. */
static int nft(const char *script, char **out)
{
	struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
	int ret;

	if (!ctx)
		return -1;
	nft_ctx_buffer_output(ctx);
	nft_ctx_buffer_error(ctx);
	ret = nft_run_cmd_from_buffer(ctx, script);
	if (ret)
		fprintf(stderr, "nft: %s", nft_ctx_get_error_buffer(ctx));
	if (out)
		*out = strdup(nft_ctx_get_output_buffer(ctx));
	nft_ctx_free(ctx);
	return ret;
}

/* A fresh namespace with table inet racks and the flow sets "test"
 * (test4, test6); its flowset. NULL (a failed check) if impossible. */
static struct flowset *fresh(void)
{
	struct flowset *fs = NULL;
	char *script = NULL;
	size_t len = 0;
	FILE *f;

	if (!CHECK(unshare(CLONE_NEWNET) == 0)) {
		perror("unshare(CLONE_NEWNET): run the unit tests as root");
		return NULL;
	}
	f = open_memstream(&script, &len);
	fprintf(f, "table %s %s {\n", RULESET_FAMILY, RULESET_TABLE);
	flowset_declare(f, "test");
	fprintf(f, "}\n");
	fclose(f);
	if (!CHECK_EQ_INT(nft(script, NULL), 0) ||
	    !CHECK_EQ_INT(flowset_open(&fs), 0))
		fs = NULL;
	free(script);
	return fs;
}

/* The elements of set NAME, as nft lists them. */
static char *listed(const char *name)
{
	char cmd[128], *out = NULL;

	snprintf(cmd, sizeof(cmd), "list set %s %s %s", RULESET_FAMILY,
		 RULESET_TABLE, name);
	CHECK_EQ_INT(nft(cmd, &out), 0);
	return out ? out : strdup("");
}

/* Flow I: 10.0.x.y:1000+i -> 10.9.0.1:22, or fd00::x:y for V6. */
static struct flowset_flow flow(unsigned i, bool v6)
{
	char l[64];
	struct flowset_flow fl;

	snprintf(l, sizeof(l), v6 ? "fd00::%u:%u" : "10.0.%u.%u", i / 250,
		 i % 250 + 1);
	fl.local.addr = unit_addr(l);
	fl.local.port = (uint16_t)(1000 + i);
	fl.remote.addr = unit_addr(v6 ? "fd00::9:1" : "10.9.0.1");
	fl.remote.port = 22;
	return fl;
}

/* Whether the listing holds FL's element, as nft prints it. */
static bool holds(const char *list, const struct flowset_flow *fl)
{
	char l[ADDR_STRLEN], r[ADDR_STRLEN], el[128];

	snprintf(el, sizeof(el), "%s . %u . %s . %u",
		 addr_format(&fl->local.addr, l, sizeof(l)), fl->local.port,
		 addr_format(&fl->remote.addr, r, sizeof(r)), fl->remote.port);
	return strstr(list, el) != NULL;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

TEST(test_add_and_delete_many_of_both_families)
{
	enum { N = 150 };	/* more than two chunks of each family */
	struct flowset_flow flows[2 * N];
	struct flowset *fs = fresh();
	char *v4, *v6;
	unsigned miss = 0;

	if (!fs)
		return;
	for (unsigned i = 0; i < N; i++) {
		flows[2 * i] = flow(i, false);
		flows[2 * i + 1] = flow(i, true);
	}
	CHECK_EQ_INT(flowset_update(fs, "test", flows, 2 * N, 10000, true), 0);
	v4 = listed("test4");
	v6 = listed("test6");
	for (unsigned i = 0; i < 2 * N; i++)
		miss += !holds(i % 2 ? v6 : v4, &flows[i]);
	CHECK_EQ_INT(miss, 0);
	/* Each with its timeout. */
	CHECK(strstr(v4, "timeout 10s") != NULL);
	free(v4);
	free(v6);

	CHECK_EQ_INT(flowset_update(fs, "test", flows, 2 * N, 0, false), 0);
	v4 = listed("test4");
	v6 = listed("test6");
	CHECK(!holds(v4, &flows[0]) && !holds(v6, &flows[1]));
	CHECK(strstr(v4, "elements") == NULL);
	CHECK(strstr(v6, "elements") == NULL);
	free(v4);
	free(v6);
	flowset_close(fs);
}

TEST(test_deletion_goes_past_an_expired_element)
{
	struct flowset_flow flows[4] = { flow(1, false), flow(2, false),
					 flow(3, false), flow(4, true) };
	struct flowset *fs = fresh();
	char *v4, *v6;

	if (!fs)
		return;
	CHECK_EQ_INT(flowset_update(fs, "test", flows, 1, 30, true), 0);
	CHECK_EQ_INT(flowset_update(fs, "test", flows + 1, 3, 10000, true), 0);
	sleep_ms(300);
	/* The first expired: the kernel refuses the transaction that names
	 * it, and the others must leave all the same. */
	CHECK_EQ_INT(flowset_update(fs, "test", flows, 4, 0, false), -ENOENT);
	v4 = listed("test4");
	v6 = listed("test6");
	for (unsigned i = 0; i < 3; i++)
		CHECK(!holds(v4, &flows[i]));
	CHECK(!holds(v6, &flows[3]));
	free(v4);
	free(v6);
	flowset_close(fs);
}

TEST(test_missing_set_is_an_error)
{
	struct flowset_flow fl = flow(1, false);
	struct flowset *fs = fresh();

	if (!fs)
		return;
	CHECK_EQ_INT(flowset_update(fs, "absent", &fl, 1, 1000, true),
		     -ENOENT);
	flowset_close(fs);
}

TEST(test_script_forms)
{
	struct flowset_flow fl = flow(7, true);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	flowset_write(f, "adopt", &fl, 10000);
	flowset_declare(f, "adopt");
	fclose(f);
	CHECK(strstr(text, "add element inet racks adopt6 { fd00::8 . 1007 . "
			   "fd00::9:1 . 22 timeout 10000ms }\n") == text);
	CHECK(strstr(text, "set adopt4 {\n\t\ttype ipv4_addr . inet_service "
			   ". ipv4_addr . inet_service\n\t\tflags timeout\n")
	      != NULL);
	CHECK(strstr(text, "set adopt6 {\n\t\ttype ipv6_addr") != NULL);
	free(text);
}

static const struct unit_test tests[] = {
	UNIT(test_add_and_delete_many_of_both_families),
	UNIT(test_deletion_goes_past_an_expired_element),
	UNIT(test_missing_set_is_an_error),
	UNIT(test_script_forms),
};

UNIT_MAIN("flowset", tests)
