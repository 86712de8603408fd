// SPDX-License-Identifier: GPL-2.0-only
#include "channel.h"

#include <errno.h>
#include <netinet/in.h> /* before linux/ headers: libc-compat */
#include <linux/netfilter.h>

#include "inject.h"
#include "keystate.h"
#include "rackd.h"

/* The window our messages advertise: the peer kernel only ever sees one
 * if the peer rackd is gone, and then a large window cannot stall it. */
#define CHANNEL_WINDOW 65535

int channel_handle(struct rackd *d, uint8_t type, channel_fn fn)
{
	struct channel *ch = d->channel;

	if (type <= EDP_SYNACK || type >= EDP_TYPE_MAX)
		return -EINVAL;
	if (ch->handlers[type])
		return -EEXIST;
	ch->handlers[type] = fn;
	return 0;
}

int channel_handle_unchecked(struct rackd *d, uint8_t type, channel_fn fn)
{
	struct channel *ch = d->channel;

	if (type <= EDP_SYNACK || type >= EDP_TYPE_MAX)
		return -EINVAL;
	if (ch->handlers[type] || ch->unchecked[type])
		return -EEXIST;
	ch->unchecked[type] = fn;
	return 0;
}

int channel_send(struct rackd *d, const struct conn *c,
		 const struct edp_msg *m)
{
	uint8_t opt[EDP_OPT_MAX_LEN + 3];
	/* Sequence numbers inside the connection's first window: plausible
	 * to middleboxes, checked by the peer rackd, and a peer without
	 * rackd drops the segment as old. Never data: nothing is consumed. */
	struct inject_segment seg = {
		.src = &c->local, .dst = &c->remote,
		.seq = c->lend.isn + 1, .ack = c->rend.isn + 1,
		.flags = TCP_FLAG_ACK, .window = CHANNEL_WINDOW,
		.options = opt, .optlen = edp_option_build(m, opt, sizeof(opt)),
	};

	return inject_send(d->inject, &seg);
}

/* Heartbeats and reconnections: the MAC's role by type and sender. */
static enum edp_role numbered_role(uint8_t type, bool client)
{
	return (enum edp_role)(EDP_ROLE_CLIENT_HEARTBEAT +
			       2 * (type - EDP_HEARTBEAT) + (client ? 0 : 1));
}

int channel_send_numbered(struct rackd *d, struct conn *c, uint8_t type,
			  uint32_t counter)
{
	struct conn_edp *e = c->edp;
	struct edp_msg m = { .version = EDP_VERSION, .type = type,
			     .conn_id = e->conn_id, .counter = counter };
	int ret;

	edp_mac_counter(e->key, numbered_role(type, conn_is_client(c)),
			counter, &e->t, m.mac);
	ret = channel_send(d, c, &m);
	if (ret)
		d->edp.send_errors++;
	else
		d->edp.msgs_out++;
	return ret;
}

bool channel_numbered_valid(struct rackd *d, struct conn *c,
			    const struct edp_msg *m)
{
	struct conn_edp *e = c->edp;

	/* The sender is the other end of this connection. */
	if (edp_mac_counter_verify(e->key,
				   numbered_role(m->type, !conn_is_client(c)),
				   m->counter, &e->t, m->mac)) {
		d->edp.bad_mac++;
		return false;
	}
	return true;
}

uint32_t channel_input(struct rackd *d, struct conn *c, const struct packet *p,
		       const struct edp_msg *m)
{
	channel_fn fn = m->type < EDP_TYPE_MAX ?
			d->channel->handlers[m->type] : NULL;

	d->edp.msgs_in++;
	/* Our messages never carry data; one that does is not ours to
	 * consume: the kernel decides about it as about any segment. */
	if (p->payload_len) {
		d->edp.with_payload++;
		return NF_ACCEPT;
	}
	if (m->type < EDP_TYPE_MAX && d->channel->unchecked[m->type])
		return d->channel->unchecked[m->type](d, c, p, m);
	if (!c) {
		d->edp.unknown_conn++;
		return NF_DROP;
	}
	/* Our messages carry exactly the first sequence numbers of the
	 * connection: a forger off the path must know both ISNs. */
	if (p->seq != c->rend.isn + 1 || p->ack != c->lend.isn + 1) {
		d->edp.bad_seq++;
		return NF_DROP;
	}
	if (!c->edp || !fn) {
		/* A released connection, or a handshake option out of place. */
		d->edp.unexpected++;
		return NF_DROP;
	}
	c->edp->received++;
	return fn(d, c, p, m);
}
