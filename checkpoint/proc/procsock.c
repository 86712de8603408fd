// SPDX-License-Identifier: GPL-2.0-only
#include "procsock.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pinfo.h"
#include "util.h"

struct fdref {
	unsigned long ino;
	pid_t pid;
	int fd;
};

/* Every "socket:[INO]" among the descriptors of the tree's processes. */
static void collect_socket_fds(const struct procsock_set *s,
			       struct fdref **refs, size_t *nrefs)
{
	for (size_t i = 0; i < s->npids; i++) {
		char path[64];
		struct dirent *de;
		DIR *d;

		snprintf(path, sizeof(path), "/proc/%d/fd", (int)s->pids[i]);
		d = opendir(path);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			char kind[16];
			unsigned long ino;

			if (!isdigit((unsigned char)de->d_name[0]))
				continue;
			if (procsock_fd_inode(s->pids[i], atoi(de->d_name), kind,
					      sizeof(kind), &ino) ||
			    strcmp(kind, "socket") != 0)
				continue;
			*refs = xrealloc(*refs, (*nrefs + 1) * sizeof(**refs));
			(*refs)[(*nrefs)++] = (struct fdref){
				ino, s->pids[i], atoi(de->d_name) };
		}
		closedir(d);
	}
}

int procsock_fd_inode(pid_t pid, int fd, char *kind, size_t kindlen,
		      unsigned long *ino)
{
	char path[64], link[128];
	ssize_t n;
	const char *br;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -errno;
	link[n] = '\0';
	br = strstr(link, ":[");
	if (!br || link[n - 1] != ']' || br == link) {
		snprintf(kind, kindlen, "other");
		*ino = 0;
		return 0;
	}
	snprintf(kind, kindlen, "%.*s", (int)(br - link), link);
	*ino = strtoul(br + 2, NULL, 10);
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* "0100007F:1F90": the address as the kernel printed its 32-bit words
 * (%08X of each word in host order), then the port. */
static int parse_endpoint(const char *s, bool v6, struct endpoint *e)
{
	size_t words = v6 ? 4 : 1;
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
					    0xff, 0xff };

	memset(e, 0, sizeof(*e));
	for (size_t w = 0; w < words; w++) {
		uint32_t v = 0;

		for (int i = 0; i < 8; i++) {
			int h = hexval(*s++);

			if (h < 0)
				return -EINVAL;
			v = v << 4 | (uint32_t)h;
		}
		memcpy(e->addr.bytes + 4 * w, &v, 4);
	}
	if (*s++ != ':')
		return -EINVAL;
	for (int i = 0; i < 4; i++) {
		int h = hexval(*s++);

		if (h < 0)
			return -EINVAL;
		e->port = (uint16_t)(e->port << 4 | h);
	}
	e->addr.family = v6 ? AF_INET6 : AF_INET;
	/* A dual-stack socket's IPv4 connection: rackd sees it as IPv4. */
	if (v6 && memcmp(e->addr.bytes, mapped, sizeof(mapped)) == 0) {
		memmove(e->addr.bytes, e->addr.bytes + 12, 4);
		memset(e->addr.bytes + 4, 0, 12);
		e->addr.family = AF_INET;
	}
	return 0;
}

static const struct fdref *find_ref(const struct fdref *refs, size_t n,
				    unsigned long ino)
{
	for (size_t i = 0; i < n; i++)
		if (refs[i].ino == ino)
			return &refs[i];
	return NULL;
}

static int read_table(pid_t root, bool v6, const struct fdref *refs,
		      size_t nrefs, struct procsock_set *s, char *err,
		      size_t errlen)
{
	char path[64], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/net/tcp%s", (int)root,
		 v6 ? "6" : "");
	f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT && v6)
			return 0;	/* no IPv6 in this kernel */
		snprintf(err, errlen, "cannot read %s: %s", path,
			 strerror(errno));
		return -errno;
	}
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';		/* the header */
	while (fgets(line, sizeof(line), f)) {
		char local[64], remote[64];
		unsigned st;
		unsigned long ino;
		struct procsock ps = { 0 };
		const struct fdref *ref;

		/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
		if (sscanf(line, " %*s %63s %63s %x %*s %*s %*s %*s %*s %lu",
			   local, remote, &st, &ino) != 4)
			continue;
		if (!ino || !(ref = find_ref(refs, nrefs, ino)))
			continue;
		if (parse_endpoint(local, v6, &ps.local) ||
		    parse_endpoint(remote, v6, &ps.remote))
			continue;
		ps.tcp_state = (uint8_t)st;
		ps.ino = ino;
		ps.pid = ref->pid;
		ps.fd = ref->fd;
		s->socks = xrealloc(s->socks, (s->n + 1) * sizeof(*s->socks));
		s->socks[s->n++] = ps;
	}
	fclose(f);
	return 0;
}

static void classify(struct procsock_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct procsock *a = &s->socks[i];

		if (a->tcp_state == TCP_LISTEN) {
			a->kind = PROCSOCK_LISTEN;
			continue;
		}
		if (a->tcp_state == TCP_CLOSE || a->remote.port == 0) {
			a->kind = PROCSOCK_IDLE;
			continue;
		}
		a->kind = PROCSOCK_NETWORK;
		for (size_t j = 0; j < s->n; j++)
			if (j != i &&
			    endpoint_equal(&s->socks[j].local, &a->remote) &&
			    endpoint_equal(&s->socks[j].remote, &a->local))
				a->kind = PROCSOCK_PAIR;
	}
}

int procsock_scan(pid_t root, struct procsock_set *s, char *err,
		  size_t errlen)
{
	struct fdref *refs = NULL;
	size_t nrefs = 0;
	int ret;

	memset(s, 0, sizeof(*s));
	s->pids = pinfo_tree(root, &s->npids);
	collect_socket_fds(s, &refs, &nrefs);
	ret = read_table(root, false, refs, nrefs, s, err, errlen);
	if (!ret)
		ret = read_table(root, true, refs, nrefs, s, err, errlen);
	free(refs);
	if (ret) {
		procsock_set_free(s);
		return ret;
	}
	classify(s);
	return 0;
}

void procsock_set_free(struct procsock_set *s)
{
	free(s->pids);
	free(s->socks);
	memset(s, 0, sizeof(*s));
}

const char *procsock_state_name(uint8_t st)
{
	static const char *const names[] = {
		[TCP_ESTABLISHED] = "established", [TCP_SYN_SENT] = "syn-sent",
		[TCP_SYN_RECV] = "syn-recv", [TCP_FIN_WAIT1] = "fin-wait-1",
		[TCP_FIN_WAIT2] = "fin-wait-2", [TCP_TIME_WAIT] = "time-wait",
		[TCP_CLOSE] = "close", [TCP_CLOSE_WAIT] = "close-wait",
		[TCP_LAST_ACK] = "last-ack", [TCP_LISTEN] = "listen",
		[TCP_CLOSING] = "closing",
	};

	return st < sizeof(names) / sizeof(names[0]) && names[st] ?
	       names[st] : "?";
}

bool procsock_local_exists(const struct endpoint *e)
{
	for (int v6 = 0; v6 < 2; v6++) {
		char line[512];
		FILE *f = fopen(v6 ? "/proc/self/net/tcp6" : "/proc/self/net/tcp",
				"re");
		bool found = false;

		if (!f)
			continue;
		if (!fgets(line, sizeof(line), f))
			line[0] = '\0';	/* the header */
		while (!found && fgets(line, sizeof(line), f)) {
			char local[64];
			unsigned st;
			struct endpoint l;

			if (sscanf(line, " %*s %63s %*s %x", local, &st) == 2 &&
			    st != TCP_LISTEN && st != TCP_TIME_WAIT &&
			    st != TCP_CLOSE && !parse_endpoint(local, v6, &l))
				found = endpoint_equal(&l, e);
		}
		fclose(f);
		if (found)
			return true;
	}
	return false;
}
