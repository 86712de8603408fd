// SPDX-License-Identifier: GPL-2.0-only
/*
 * The host key's file in a temporary directory: made 0600 with a key
 * whose halves match, read back the same, never replaced (neither a
 * malformed file nor by racing creators), refused when others may read
 * it, when another user owns it (as root) or when it is a symbolic link,
 * and rotated with the old key kept in PATH.old.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "hostid.h"
#include "hostkey_file.h"
#include "unit.h"

static char dir[64], path[128], old_path[160];

static void setup(void)
{
	if (sodium_init() < 0)
		abort();
	snprintf(dir, sizeof(dir), "/tmp/racks-hostkey-XXXXXX");
	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/hostkey", dir);
	snprintf(old_path, sizeof(old_path), "%s.old", path);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		abort();
}

static void write_file(const char *p, const char *text, mode_t mode)
{
	FILE *f;

	unlink(p);
	f = fopen(p, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) || chmod(p, mode))
		abort();
}

static char *read_text(const char *p)
{
	static char buf[512];
	FILE *f = fopen(p, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* No PATH.tmp.* left behind in DIR. */
static unsigned entries(void)
{
	char cmd[160];
	FILE *p;
	unsigned n = 0;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
	p = popen(cmd, "r");
	if (!p || fscanf(p, "%u", &n) != 1)
		abort();
	pclose(p);
	return n;
}

TEST(created_0600_and_read_back)
{
	struct hostkey k, again;
	char err[512] = "";
	bool created = false;
	struct stat st;

	setup();
	CHECK_EQ_INT(hostkey_load(path, &k, err, sizeof(err)), -ENOENT);
	if (!CHECK_EQ_INT(hostkey_load_or_create(path, &k, &created, err,
						 sizeof(err)), 0))
		fprintf(stderr, "  %s\n", err);
	CHECK(created);
	CHECK(hostkey_matches(&k));
	if (CHECK_EQ_INT(stat(path, &st), 0)) {
		CHECK_EQ_INT(st.st_mode & 07777, 0600);
		CHECK_EQ_INT(st.st_uid, geteuid());
	}
	CHECK_EQ_INT(entries(), 1);
	/* The format: two lines, the public key as hostid.h writes it. */
	{
		char pub[EDP_HOST_KEY_STRLEN], want[128];
		char *text = read_text(path);

		edp_host_key_format(k.pk, pub);
		snprintf(want, sizeof(want), "public %s\nsecret ", pub);
		CHECK(text && !strncmp(text, want, strlen(want)));
		CHECK_EQ_INT(text ? strlen(text) : 0, strlen(want) + 45);
	}
	created = true;
	CHECK_EQ_INT(hostkey_load_or_create(path, &again, &created, err,
					    sizeof(err)), 0);
	CHECK(!created);
	CHECK_EQ_MEM(&again, &k, sizeof(k));
	CHECK_EQ_INT(hostkey_load(path, &again, err, sizeof(err)), 0);
	CHECK_EQ_MEM(&again, &k, sizeof(k));
	hostkey_wipe(&k);
	hostkey_wipe(&again);
	teardown();
}

/* Every one of several processes racing to create the key gets the same
 * one: the first link wins, the others read it. */
TEST(racing_creators_agree)
{
	enum { N = 6 };
	uint8_t got[N][32];
	int pfd[2];
	struct hostkey k;
	char err[512];

	setup();
	if (pipe(pfd))
		abort();
	for (int i = 0; i < N; i++) {
		if (fork() == 0) {
			struct hostkey mine;
			bool created;

			close(pfd[0]);
			if (hostkey_load_or_create(path, &mine, &created, err,
						   sizeof(err)) ||
			    write(pfd[1], mine.pk, 32) != 32)
				_exit(1);
			_exit(0);
		}
	}
	close(pfd[1]);
	for (int i = 0; i < N; i++)
		CHECK_EQ_INT(read(pfd[0], got[i], 32), 32);
	close(pfd[0]);
	for (int i = 0; i < N; i++) {
		int status;

		wait(&status);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	if (CHECK_EQ_INT(hostkey_load(path, &k, err, sizeof(err)), 0))
		for (int i = 0; i < N; i++)
			CHECK_EQ_MEM(got[i], k.pk, 32);
	CHECK_EQ_INT(entries(), 1);
	hostkey_wipe(&k);
	teardown();
}

/* Refused with the path and the reason, and never replaced. */
TEST(malformed_refused_not_replaced)
{
	static const struct {
		const char *text, *why;
	} cases[] = {
		{ "", "line 1 is not 'public racks-x25519:...'" },
		{ "public racks-x25519:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
		  "line 1 is not" },
		{ "public racks-x25519:AAECAw==\nsecret x\n", "bad public key" },
		{ "public racks-x25519:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"
		  "secret AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8\n",
		  "bad secret key" },
		{ "public racks-x25519:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"
		  "secrets AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n",
		  "line 2 is not 'secret BASE64'" },
		/* Two well-formed halves that are not one pair. */
		{ "public racks-x25519:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"
		  "secret AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n",
		  "the public key is not the secret key's" },
	};
	struct hostkey k;
	char err[512], want[256];
	bool created;

	setup();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		write_file(path, cases[i].text, 0600);
		created = true;
		CHECK_EQ_INT(hostkey_load_or_create(path, &k, &created, err,
						    sizeof(err)), -EINVAL);
		CHECK(!created);
		snprintf(want, sizeof(want), "host key %s is malformed: ", path);
		if (!CHECK(!strncmp(err, want, strlen(want))) ||
		    !CHECK(strstr(err, cases[i].why) != NULL))
			fprintf(stderr, "  case %zu: %s\n", i, err);
		CHECK_EQ_STR(read_text(path), cases[i].text);
		CHECK_EQ_INT(hostkey_rotate(path, NULL, NULL, err, sizeof(err)),
			     -EINVAL);
		CHECK(access(old_path, F_OK) != 0);
	}
	/* Text after a valid key. */
	unlink(path);
	CHECK_EQ_INT(hostkey_load_or_create(path, &k, &created, err,
					    sizeof(err)), 0);
	{
		char text[256];

		snprintf(text, sizeof(text), "%sextra\n", read_text(path));
		write_file(path, text, 0600);
		CHECK_EQ_INT(hostkey_load(path, &k, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, "text after line 2") != NULL);
	}
	teardown();
}

TEST(too_open_other_owner_or_link_refused)
{
	struct hostkey k;
	char err[512], link_path[160];
	bool created;

	setup();
	CHECK_EQ_INT(hostkey_load_or_create(path, &k, &created, err,
					    sizeof(err)), 0);
	static const mode_t modes[] = { 0644, 0640, 0604, 0660, 0700 | 004 };

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		chmod(path, modes[i]);
		CHECK_EQ_INT(hostkey_load_or_create(path, &k, &created, err,
						    sizeof(err)), -EPERM);
		CHECK(strstr(err, "others may read it") != NULL);
		CHECK(strstr(err, path) != NULL);
	}
	chmod(path, 0400);
	CHECK_EQ_INT(hostkey_load(path, &k, err, sizeof(err)), 0);
	chmod(path, 0600);
	if (geteuid() == 0) {
		if (!CHECK_EQ_INT(chown(path, 1, 1), 0))
			return;
		CHECK_EQ_INT(hostkey_load(path, &k, err, sizeof(err)), -EPERM);
		CHECK(strstr(err, "is owned by uid 1, not by uid 0") != NULL);
		CHECK_EQ_INT(chown(path, 0, 0), 0);
	} else {
		fprintf(stderr, "  (not root: another owner not tried)\n");
	}
	snprintf(link_path, sizeof(link_path), "%s/link", dir);
	if (CHECK_EQ_INT(symlink(path, link_path), 0)) {
		CHECK_EQ_INT(hostkey_load_or_create(link_path, &k, &created,
						    err, sizeof(err)), -ELOOP);
		CHECK(strstr(err, "symbolic link") != NULL);
	}
	hostkey_wipe(&k);
	teardown();
}

/* A directory that does not exist: an error that is neither -EINVAL nor
 * -EPERM, which rackd takes as "make a key in memory". */
TEST(cannot_create)
{
	struct hostkey k;
	char err[512];
	bool created = true;

	CHECK_EQ_INT(hostkey_load_or_create("/nonexistent-racks/hostkey", &k,
					    &created, err, sizeof(err)),
		     -ENOENT);
	CHECK(!created);
	CHECK(strstr(err, "host key /nonexistent-racks/hostkey cannot be "
		      "created") != NULL);
}

TEST(rotate_keeps_old)
{
	struct hostkey first, old, new, now, kept;
	char err[512], first_text[256];
	bool created;

	setup();
	CHECK_EQ_INT(hostkey_rotate(path, &old, &new, err, sizeof(err)),
		     -ENOENT);
	CHECK(strstr(err, "--init-host-key") != NULL);
	CHECK_EQ_INT(hostkey_load_or_create(path, &first, &created, err,
					    sizeof(err)), 0);
	snprintf(first_text, sizeof(first_text), "%s", read_text(path));
	if (!CHECK_EQ_INT(hostkey_rotate(path, &old, &new, err, sizeof(err)),
			  0))
		fprintf(stderr, "  %s\n", err);
	CHECK_EQ_MEM(&old, &first, sizeof(old));
	CHECK(memcmp(new.pk, first.pk, 32) != 0);
	CHECK(hostkey_matches(&new));
	CHECK_EQ_INT(hostkey_load(path, &now, err, sizeof(err)), 0);
	CHECK_EQ_MEM(&now, &new, sizeof(now));
	CHECK_EQ_INT(hostkey_load(old_path, &kept, err, sizeof(err)), 0);
	CHECK_EQ_MEM(&kept, &first, sizeof(kept));
	CHECK_EQ_STR(read_text(old_path), first_text);
	CHECK_EQ_INT(entries(), 2);
	/* Again: .old is now the second key. */
	CHECK_EQ_INT(hostkey_rotate(path, &old, &new, err, sizeof(err)), 0);
	CHECK_EQ_MEM(&old, &now, sizeof(old));
	CHECK_EQ_INT(hostkey_load(old_path, &kept, err, sizeof(err)), 0);
	CHECK_EQ_MEM(&kept, &now, sizeof(kept));
	CHECK_EQ_INT(entries(), 2);
	hostkey_wipe(&first);
	hostkey_wipe(&old);
	hostkey_wipe(&new);
	teardown();
}

static const struct unit_test tests[] = {
	UNIT(created_0600_and_read_back),
	UNIT(racing_creators_agree),
	UNIT(malformed_refused_not_replaced),
	UNIT(too_open_other_owner_or_link_refused),
	UNIT(cannot_create),
	UNIT(rotate_keeps_old),
};

UNIT_MAIN("hostkey", tests)
