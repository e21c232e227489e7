// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: the remote-memory wire codec.
 *
 * One rule table says what each opcode may carry, and one check applies
 * it, to what we send and to what we receive: a peer's message is trusted
 * no more than our own.
 */
#include "dsmem_wire.h"

struct dsmem_wire_rule {
	u8 flags;		/* flags the opcode may carry */
	bool reply;		/* a reply: status is meaningful */
	bool data;		/* len bytes of data follow the header */
	bool addr;		/* addr names remote memory (checked with len) */
	bool len;		/* len must be non-zero */
	bool failure;		/* status must be non-zero (an error reply) */
	bool success;		/* status must be zero */
	u8 answer;		/* a request: the reply that answers it */
	u8 answer_error;	/* and another that may, carrying a status */
};

static const struct dsmem_wire_rule dsmem_wire_rules[] = {
	[DSMEM_WIRE_ALLOC]		= { .len = true,
					    .answer = DSMEM_WIRE_REPLY_ALLOC },
	[DSMEM_WIRE_REPLY_ALLOC]	= { .reply = true },
	[DSMEM_WIRE_FREE]		= { .addr = true,
					    .answer = DSMEM_WIRE_REPLY_FREE },
	[DSMEM_WIRE_REPLY_FREE]		= { .reply = true },
	[DSMEM_WIRE_READ]		= { .addr = true, .len = true,
					    .answer = DSMEM_WIRE_REPLY_READ,
					    .answer_error =
						DSMEM_WIRE_REPLY_READ_ERROR },
	[DSMEM_WIRE_REPLY_READ]		= { .reply = true, .data = true,
					    .addr = true, .len = true,
					    .success = true },
	[DSMEM_WIRE_REPLY_READ_ERROR]	= { .reply = true, .failure = true },
	[DSMEM_WIRE_WRITE]		= { .flags = DSMEM_WIRE_F_ACK,
					    .data = true, .addr = true,
					    .len = true,
					    .answer = DSMEM_WIRE_REPLY_WRITE },
	[DSMEM_WIRE_REPLY_WRITE]	= { .reply = true },
	[DSMEM_WIRE_GRANT]		= { .data = true, .len = true,
					    .answer = DSMEM_WIRE_REPLY_GRANT },
	[DSMEM_WIRE_REPLY_GRANT]	= { .reply = true },
	[DSMEM_WIRE_REVOKE]		= {
					    .answer = DSMEM_WIRE_REPLY_REVOKE },
	[DSMEM_WIRE_REPLY_REVOKE]	= { .reply = true },
	[DSMEM_WIRE_PING]		= { },
	[DSMEM_WIRE_REPLY_ERROR]	= { .reply = true, .failure = true },
	[DSMEM_WIRE_SLOPE_LEASE_REQ]	= { .answer = DSMEM_WIRE_REPLY_SLOPE },
	[DSMEM_WIRE_SLOPE_LEASE_RET]	= { .answer = DSMEM_WIRE_REPLY_SLOPE },
	[DSMEM_WIRE_SLOPE_LEASE_COUNT]	= { },
	[DSMEM_WIRE_SLOPE_FREE]		= { .data = true, .len = true,
					    .answer = DSMEM_WIRE_REPLY_SLOPE },
	[DSMEM_WIRE_SLOPE_MIG_PUT]	= { .data = true, .len = true,
					    .answer = DSMEM_WIRE_REPLY_SLOPE },
	/* len: bytes staged by the PUTs before it */
	[DSMEM_WIRE_SLOPE_MIG_BEGIN]	= { .len = true,
					    .answer = DSMEM_WIRE_REPLY_SLOPE_KEYS,
					    .answer_error = DSMEM_WIRE_REPLY_SLOPE },
	[DSMEM_WIRE_SLOPE_MIG_HANDOVER]	= { .len = true,
					    .answer = DSMEM_WIRE_REPLY_SLOPE },
	[DSMEM_WIRE_SLOPE_MIG_DONE]	= { .answer = DSMEM_WIRE_REPLY_SLOPE },
	[DSMEM_WIRE_SLOPE_MIG_ABORT]	= { .answer = DSMEM_WIRE_REPLY_SLOPE },
	[DSMEM_WIRE_REPLY_SLOPE]	= { .reply = true },
	[DSMEM_WIRE_REPLY_SLOPE_KEYS]	= { .reply = true, .data = true,
					    .len = true, .success = true },
	[DSMEM_WIRE_AUTH]		= { .data = true, .len = true },
	[DSMEM_WIRE_PATHS]		= { .answer = DSMEM_WIRE_REPLY_PATHS },
	[DSMEM_WIRE_REPLY_PATHS]	= { .reply = true, .data = true,
					    .success = true },
};

static const struct dsmem_wire_rule *dsmem_wire_rule(u8 opcode)
{
	if (!opcode || opcode > DSMEM_WIRE_OP_MAX)
		return NULL;
	return &dsmem_wire_rules[opcode];
}

static size_t dsmem_wire_units(const struct dsmem_wire_rule *r, u64 len)
{
	if (!r->data)
		return 1;
	return 1 + (len + DSMEM_WIRE_UNIT - 1) / DSMEM_WIRE_UNIT;
}

/* The rules, for a message about to be sent or just received. */
static int dsmem_wire_check(const struct dsmem_wire_msg *m)
{
	const struct dsmem_wire_rule *r = dsmem_wire_rule(m->opcode);

	if (!r)
		return -EOPNOTSUPP;
	if (m->flags & ~r->flags)
		return -EINVAL;
	if (!r->reply && m->status)
		return -EINVAL;
	if ((r->failure && !m->status) || (r->success && m->status))
		return -EINVAL;
	if (r->len && !m->len)
		return -EINVAL;
	if ((r->data || m->opcode == DSMEM_WIRE_READ) &&
	    m->len > DSMEM_WIRE_MAX_DATA)
		return -EMSGSIZE;
	if (r->addr && m->addr + m->len < m->addr)
		return -EOVERFLOW;
	return 0;
}

/*
 * Whether a (decoded) reply answers the request it names by tag: a tag
 * is only a number the peer echoes, so the opcode must be the one the
 * request expects -- or an error reply, which carries nothing but its
 * status -- and a READ's data must be the range that was asked for.
 */
int dsmem_wire_reply_check(const struct dsmem_wire_msg *req,
			   const struct dsmem_wire_msg *reply)
{
	const struct dsmem_wire_rule *r = dsmem_wire_rule(req->opcode);

	if (!r || !r->answer)
		return -EPROTO;		/* nothing was to answer this */
	if (reply->opcode == DSMEM_WIRE_REPLY_ERROR)
		return 0;
	if (r->answer_error && reply->opcode == r->answer_error &&
	    reply->status)
		return 0;
	if (reply->opcode != r->answer)
		return -EPROTO;
	if (reply->opcode == DSMEM_WIRE_REPLY_READ &&
	    (reply->addr != req->addr || reply->len != req->len))
		return -EPROTO;
	return 0;
}

bool dsmem_wire_is_reply(u8 opcode)
{
	const struct dsmem_wire_rule *r = dsmem_wire_rule(opcode);

	return r && r->reply;
}

bool dsmem_wire_is_request(u8 opcode)
{
	return !dsmem_wire_is_reply(opcode) && opcode != DSMEM_WIRE_PING &&
	       opcode != DSMEM_WIRE_AUTH;
}

size_t dsmem_wire_size(u8 opcode, u64 len)
{
	const struct dsmem_wire_rule *r = dsmem_wire_rule(opcode);

	if (!r || (r->data && len > DSMEM_WIRE_MAX_DATA))
		return 0;
	return dsmem_wire_units(r, len) * DSMEM_WIRE_UNIT;
}

int dsmem_wire_encode(void *buf, size_t size, const struct dsmem_wire_msg *m)
{
	const struct dsmem_wire_rule *r = dsmem_wire_rule(m->opcode);
	struct dsmem_wire_hdr *h = buf;
	size_t units;
	int ret;

	ret = dsmem_wire_check(m);
	if (ret)
		return ret;
	units = dsmem_wire_units(r, m->len);
	if (size < units * DSMEM_WIRE_UNIT)
		return -ENOSPC;
	if (r->data && !m->data)
		return -EINVAL;

	memset(buf, 0, units * DSMEM_WIRE_UNIT);
	h->magic = DSMEM_WIRE_MAGIC;
	h->version = DSMEM_WIRE_VERSION;
	h->opcode = m->opcode;
	h->flags = m->flags;
	h->status = cpu_to_le16(m->status);
	h->units = cpu_to_le16((u16)units);
	h->tag = cpu_to_le32(m->tag);
	h->seq = cpu_to_le32(m->seq);
	h->addr = cpu_to_le64(m->addr);
	h->len = cpu_to_le64(m->len);
	h->aux = cpu_to_le64(m->aux);
	h->handled = cpu_to_le32(m->handled);
	if (r->data)
		memcpy(h + 1, m->data, m->len);
	return (int)(units * DSMEM_WIRE_UNIT);
}

static bool dsmem_wire_zero(const u8 *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

int dsmem_wire_decode(const void *buf, size_t size, struct dsmem_wire_msg *m)
{
	const struct dsmem_wire_hdr *h = buf;
	const struct dsmem_wire_rule *r;
	size_t units;
	int ret;

	/* a garbage or truncated message says nothing reliable */
	if (size < DSMEM_WIRE_UNIT || size % DSMEM_WIRE_UNIT ||
	    size > DSMEM_WIRE_MAX_UNITS * DSMEM_WIRE_UNIT)
		return -EBADMSG;
	if (h->magic != DSMEM_WIRE_MAGIC)
		return -EBADMSG;
	if (h->version != DSMEM_WIRE_VERSION)
		return -EPROTONOSUPPORT;
	if (le16_to_cpu(h->units) != size / DSMEM_WIRE_UNIT)
		return -EBADMSG;
	if (!dsmem_wire_zero(h->reserved, sizeof(h->reserved)))
		return -EINVAL;

	m->opcode = h->opcode;
	m->flags = h->flags;
	m->status = le16_to_cpu(h->status);
	m->tag = le32_to_cpu(h->tag);
	m->seq = le32_to_cpu(h->seq);
	m->addr = le64_to_cpu(h->addr);
	m->len = le64_to_cpu(h->len);
	m->aux = le64_to_cpu(h->aux);
	m->handled = le32_to_cpu(h->handled);
	m->data = NULL;

	ret = dsmem_wire_check(m);
	if (ret)
		return ret;
	r = dsmem_wire_rule(m->opcode);
	units = dsmem_wire_units(r, m->len);
	if (units != size / DSMEM_WIRE_UNIT)
		return -EBADMSG;
	if (r->data) {
		const u8 *data = (const u8 *)(h + 1);

		/* the padding of the last unit is zero, as encode leaves it */
		if (!dsmem_wire_zero(data + m->len,
				     (units - 1) * DSMEM_WIRE_UNIT - m->len))
			return -EBADMSG;
		m->data = data;
	}
	return 0;
}

size_t dsmem_wire_grant_size(u32 nkeys)
{
	if (nkeys > DSMEM_WIRE_GRANT_MAX_KEYS)
		return 0;
	return sizeof(struct dsmem_wire_grant) + nkeys * sizeof(__le32);
}

int dsmem_wire_grant_encode(void *buf, size_t size,
			    const struct dsmem_wire_grant_info *g,
			    const u32 *rkeys)
{
	struct dsmem_wire_grant *w = buf;
	size_t need = dsmem_wire_grant_size(g->nkeys);
	u32 i;

	if (!need)
		return -EMSGSIZE;
	if (size < need)
		return -ENOSPC;
	w->base = cpu_to_le64(g->base);
	w->size = cpu_to_le64(g->size);
	w->span = cpu_to_le64(g->span);
	w->perm = cpu_to_le32(g->perm);
	w->nkeys = cpu_to_le32(g->nkeys);
	for (i = 0; i < g->nkeys; i++)
		w->rkeys[i] = cpu_to_le32(rkeys[i]);
	return (int)need;
}

/*
 * The structure is checked here; whether the grantor may grant this
 * range (its own node's memory) is the receiver's business.
 */
int dsmem_wire_grant_decode(const void *buf, size_t size,
			    struct dsmem_wire_grant_info *g)
{
	const struct dsmem_wire_grant *w = buf;

	if (size < sizeof(*w))
		return -EBADMSG;
	g->base = le64_to_cpu(w->base);
	g->size = le64_to_cpu(w->size);
	g->span = le64_to_cpu(w->span);
	g->perm = le32_to_cpu(w->perm);
	g->nkeys = le32_to_cpu(w->nkeys);
	g->rkeys = w->rkeys;
	if (size != dsmem_wire_grant_size(g->nkeys))
		return -EBADMSG;
	if (!g->perm || g->perm & ~DSMEM_WIRE_PERM_ALL)
		return -EINVAL;
	if (!g->size || g->base + g->size < g->base)
		return -EOVERFLOW;
	/* keys, if any, cover the range exactly: span * (nkeys - 1) < size */
	if (g->nkeys) {
		if (!g->span || g->span > g->size)
			return -EINVAL;
		if ((g->size - 1) / g->span + 1 != g->nkeys)
			return -EINVAL;
	}
	return 0;
}

u32 dsmem_wire_grant_rkey(const struct dsmem_wire_grant_info *g, u32 i)
{
	const __le32 *k = g->rkeys;

	return le32_to_cpu(k[i]);
}

void dsmem_wire_cm_encode(struct dsmem_wire_cm *cm,
			  const struct dsmem_wire_cm_info *info)
{
	memset(cm, 0, sizeof(*cm));
	cm->magic = DSMEM_WIRE_MAGIC;
	cm->version = DSMEM_WIRE_VERSION;
	cm->flags = cpu_to_le16(info->flags);
	cm->src_node = cpu_to_le32(info->src_node);
	cm->dst_node = cpu_to_le32(info->dst_node);
	memcpy(cm->nonce, info->nonce, sizeof(cm->nonce));
}

/* rdma_cm may hand us more bytes than were sent (padded to its size). */
int dsmem_wire_cm_decode(const void *buf, size_t size,
			 struct dsmem_wire_cm_info *info)
{
	const struct dsmem_wire_cm *cm = buf;

	if (!buf || size < sizeof(*cm))
		return -EBADMSG;
	if (cm->magic != DSMEM_WIRE_MAGIC)
		return -EBADMSG;
	if (cm->version != DSMEM_WIRE_VERSION)
		return -EPROTONOSUPPORT;
	if ((le16_to_cpu(cm->flags) & ~DSMEM_WIRE_CM_F_ALL) || cm->reserved1)
		return -EINVAL;
	info->flags = le16_to_cpu(cm->flags);
	info->src_node = le32_to_cpu(cm->src_node);
	info->dst_node = le32_to_cpu(cm->dst_node);
	memcpy(info->nonce, cm->nonce, sizeof(info->nonce));
	if (!info->src_node || info->src_node > DSMEM_NODE_ID_MAX ||
	    info->dst_node > DSMEM_NODE_ID_MAX)
		return -EINVAL;
	return 0;
}

static u8 *dsmem_wire_put_le32(u8 *p, u32 v)
{
	__le32 le = cpu_to_le32(v);

	memcpy(p, &le, sizeof(le));
	return p + sizeof(le);
}

void dsmem_wire_auth_input(u8 out[DSMEM_WIRE_AUTH_INPUT_LEN],
			   const struct dsmem_wire_auth_info *a)
{
	static const char label[13] = "dsmem-auth-v2";
	u8 *p = out;

	memcpy(p, label, sizeof(label));
	p += sizeof(label);
	*p++ = a->role;
	memcpy(p, a->nonce_c, DSMEM_WIRE_NONCE_LEN);
	p += DSMEM_WIRE_NONCE_LEN;
	memcpy(p, a->nonce_a, DSMEM_WIRE_NONCE_LEN);
	p += DSMEM_WIRE_NONCE_LEN;
	memcpy(p, a->gid_c, DSMEM_WIRE_GID_LEN);
	p += DSMEM_WIRE_GID_LEN;
	memcpy(p, a->gid_a, DSMEM_WIRE_GID_LEN);
	p += DSMEM_WIRE_GID_LEN;
	p = dsmem_wire_put_le32(p, a->node_c);
	p = dsmem_wire_put_le32(p, a->node_a);
	p = dsmem_wire_put_le32(p, a->qpn_c);
	dsmem_wire_put_le32(p, a->qpn_a);
}
