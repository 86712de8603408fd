// SPDX-License-Identifier: GPL-2.0-only
/*
 * The stateful fuzzer's address pool (engine.h): two local and three
 * remote addresses per family, two local and three remote ports. A flow
 * is a socket tuple of the pool, numbered by its five choices, so that
 * the input names one in a byte and collisions with known connections
 * are frequent. Also the segment helpers the network and the remote
 * hosts share.
 */
#include <arpa/inet.h>
#include <string.h>

#include "engine.h"
#include "inject.h"
#include "option.h"
#include "packet.h"

static const char *const local_text[2][FZ_LOCAL_ADDRS] = {
	{ "192.0.2.1", "192.0.2.11" }, { "2001:db8::1", "2001:db8::11" },
};
static const char *const remote_text[2][FZ_REMOTE_ADDRS] = {
	{ "198.51.100.2", "198.51.100.12", "198.51.100.22" },
	{ "2001:db8:1::2", "2001:db8:1::12", "2001:db8:1::22" },
};
static const uint16_t local_ports[2] = { 443, 40000 };
static const uint16_t remote_ports[3] = { 443, 50000, 50001 };
static struct addr local_addrs[2][FZ_LOCAL_ADDRS];
static struct addr remote_addrs[2][FZ_REMOTE_ADDRS];

static void parse(const char *s, struct addr *a)
{
	a->family = strchr(s, ':') ? AF_INET6 : AF_INET;
	FZ_CHECK(inet_pton(a->family, s, a->bytes) == 1, "pool %s", s);
}

void fz_pool_init(void)
{
	for (int f = 0; f < 2; f++) {
		for (int i = 0; i < FZ_LOCAL_ADDRS; i++)
			parse(local_text[f][i], &local_addrs[f][i]);
		for (int i = 0; i < FZ_REMOTE_ADDRS; i++)
			parse(remote_text[f][i], &remote_addrs[f][i]);
	}
}

const struct addr *fz_local_addr(int f, int i)
{
	return &local_addrs[f][i];
}

uint32_t fz_local_ifindex(int i)
{
	return 2 + (uint32_t)i;	/* both families' address I on link I */
}

const struct addr *fz_remote_addr(int f, int i)
{
	return &remote_addrs[f][i];
}

uint16_t fz_local_port(int i)
{
	return local_ports[i];
}

uint16_t fz_remote_port(int i)
{
	return remote_ports[i];
}

void fz_flow_endpoints(unsigned n, struct endpoint *local,
		       struct endpoint *remote)
{
	int f = n & 1;

	memset(local, 0, sizeof(*local));
	memset(remote, 0, sizeof(*remote));
	local->addr = local_addrs[f][n >> 1 & 1];
	remote->addr = remote_addrs[f][n >> 2 & 1];
	local->port = local_ports[n >> 3 & 1];
	remote->port = remote_ports[n >> 4 & 1];
}

static int index_of(const struct addr *a, const struct addr *pool, int n)
{
	for (int i = 0; i < n; i++)
		if (addr_equal(a, &pool[i]))
			return i;
	return -1;
}

int fz_remote_index(const struct addr *a)
{
	return index_of(a, remote_addrs[a->family == AF_INET6],
			FZ_REMOTE_ADDRS);
}

int fz_local_index(const struct addr *a)
{
	return index_of(a, local_addrs[a->family == AF_INET6], FZ_LOCAL_ADDRS);
}

int fz_flow_of(const struct endpoint *local, const struct endpoint *remote)
{
	int f = local->addr.family == AF_INET6;
	int li = fz_local_index(&local->addr);
	int ri = index_of(&remote->addr, remote_addrs[f], 2);
	int lp = local->port == local_ports[0] ? 0 :
		 local->port == local_ports[1] ? 1 : -1;
	int rp = remote->port == remote_ports[0] ? 0 :
		 remote->port == remote_ports[1] ? 1 : -1;

	if (local->addr.family != remote->addr.family || li < 0 || ri < 0 ||
	    lp < 0 || rp < 0)
		return -1;
	return f | li << 1 | ri << 2 | lp << 3 | rp << 4;
}

/* An address of this host that the wire reaches, or that routes. */
bool fz_present(const struct addr *a)
{
	int i = fz_local_index(a);

	return i >= 0 && fz_addr_present[a->family == AF_INET6] & (1u << i);
}

bool fz_kept(const struct addr *a)
{
	int i = fz_local_index(a);

	return i >= 0 && fz_lo_kept[a->family == AF_INET6] & (1u << i);
}

bool fz_is_cut(const struct addr *a)
{
	int i = fz_local_index(a);

	return i >= 0 && fz_cut & (1u << i);
}

/* ---- segments ---- */

bool fz_seg_parse(const uint8_t *pkt, size_t len, struct fz_seg *s,
		  struct packet *p)
{
	if (packet_parse(pkt, len, p) != PACKET_OK)
		return false;
	memset(s, 0, sizeof(*s));
	s->src = (struct endpoint){ p->src, p->sport };
	s->dst = (struct endpoint){ p->dst, p->dport };
	s->seq = p->seq;
	s->ack = p->ack;
	s->flags = p->flags;
	s->window = p->window;
	s->tos = p->family == AF_INET ? pkt[1]
				      : (uint8_t)((pkt[0] << 4) | (pkt[1] >> 4));
	s->optlen = p->hdr_len - 20;
	memcpy(s->opt, p->data + p->tcp_off + 20, s->optlen);
	s->paylen = p->payload_len < sizeof(s->payload) ? p->payload_len
							: sizeof(s->payload);
	memcpy(s->payload, p->data + p->tcp_off + p->hdr_len, s->paylen);
	return true;
}

size_t fz_seg_build(const struct fz_seg *s, uint8_t *out, size_t size)
{
	struct inject_segment is = {
		.src = &s->src, .dst = &s->dst, .seq = s->seq, .ack = s->ack,
		.flags = s->flags, .window = s->window, .tos = s->tos,
		.options = s->opt, .optlen = s->optlen, .payload = s->payload,
		.paylen = s->paylen,
	};

	return fz_build(&is, out, size);
}

/* The first kind-254 option's bytes (what nft's "tcp option @254" reads),
 * NULL if none. */
const uint8_t *fz_exp_option(const struct fz_seg *s, size_t *len)
{
	for (size_t i = 0; i < s->optlen;) {
		uint8_t kind = s->opt[i];

		if (kind == TCP_OPT_EOL)
			break;
		if (kind == TCP_OPT_NOP) {
			i++;
			continue;
		}
		if (i + 1 >= s->optlen || s->opt[i + 1] < 2 ||
		    i + s->opt[i + 1] > s->optlen)
			break;
		if (kind == TCP_OPT_EXP) {
			*len = s->opt[i + 1];
			return s->opt + i;
		}
		i += s->opt[i + 1];
	}
	return NULL;
}

bool fz_racks_exid(const uint8_t *o, size_t len)
{
	return o && len >= 4 && (o[2] << 8 | o[3]) == EDP_EXID;
}
