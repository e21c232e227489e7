// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: the services registered with the transport, and the request
 * opcodes each one serves.  The tables change only at module init and
 * exit, when no node exists, so lookups need no lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include "dsmem_rdm.h"

static struct dsmem_service *dsmem_services[DSMEM_SERVICES_MAX];
static unsigned int dsmem_nservices;
/* request opcode -> its entry and the service that registered it */
static struct {
	const struct dsmem_msg_op *op;
	struct dsmem_service *svc;
} dsmem_msg_routes[DSMEM_WIRE_OP_MAX + 1];

int dsmem_service_register(struct dsmem_service *svc)
{
	unsigned int i;

	if (WARN_ON(dsmem_nservices == DSMEM_SERVICES_MAX))
		return -ENOSPC;
	for (i = 0; i < svc->nops; i++) {
		const struct dsmem_msg_op *op = &svc->ops[i];

		if (WARN_ON(op->opcode > DSMEM_WIRE_OP_MAX ||
			    dsmem_msg_routes[op->opcode].op ||
			    dsmem_wire_is_reply(op->opcode) || !op->handle))
			goto err_unclaim;
		dsmem_msg_routes[op->opcode].op = op;
		dsmem_msg_routes[op->opcode].svc = svc;
	}
	svc->index = dsmem_nservices;
	dsmem_services[dsmem_nservices++] = svc;
	return 0;

err_unclaim:
	while (i--)
		dsmem_msg_routes[svc->ops[i].opcode].op = NULL;
	return -EINVAL;
}

/* In the reverse order of registering, with no node left. */
void dsmem_service_unregister(struct dsmem_service *svc)
{
	unsigned int i;

	if (WARN_ON(!dsmem_nservices ||
		    dsmem_services[dsmem_nservices - 1] != svc))
		return;
	for (i = 0; i < svc->nops; i++)
		dsmem_msg_routes[svc->ops[i].opcode].op = NULL;
	dsmem_services[--dsmem_nservices] = NULL;
}

void *dsmem_node_priv(const struct dsmem_node *node,
		      const struct dsmem_service *svc)
{
	return node->svc_priv[svc->index];
}

int dsmem_services_node_init(struct dsmem_node *node)
{
	unsigned int i;
	int ret;

	for (i = 0; i < dsmem_nservices; i++) {
		struct dsmem_service *svc = dsmem_services[i];

		if (!svc->node_init)
			continue;
		ret = svc->node_init(node, &node->svc_priv[i]);
		if (ret)
			goto err_undo;
	}
	node->svc_ready = dsmem_nservices;
	return 0;

err_undo:
	/* those made so far, as a node that dies at once */
	node->svc_ready = i;
	dsmem_services_node_dead(node);
	dsmem_services_node_fini(node);
	return ret;
}

void dsmem_services_node_dead(struct dsmem_node *node)
{
	unsigned int i = node->svc_ready;

	while (i--)
		if (dsmem_services[i]->node_dead)
			dsmem_services[i]->node_dead(node, node->svc_priv[i]);
}

void dsmem_services_node_fini(struct dsmem_node *node)
{
	unsigned int i = node->svc_ready;

	while (i--)
		if (dsmem_services[i]->node_fini)
			dsmem_services[i]->node_fini(node, node->svc_priv[i]);
	node->svc_ready = 0;
}

/* Whether svc hears of, and serves on, conn. */
static bool dsmem_service_on(const struct dsmem_service *svc,
			     const struct dsmem_conn *conn)
{
	return !conn->path || svc->paths;
}

void dsmem_services_conn_up(struct dsmem_conn *conn)
{
	struct dsmem_node *node = conn->peer->node;
	unsigned int i;

	for (i = 0; i < node->svc_ready; i++)
		if (dsmem_services[i]->conn_up &&
		    dsmem_service_on(dsmem_services[i], conn))
			dsmem_services[i]->conn_up(conn, node->svc_priv[i]);
}

void dsmem_services_conn_down(struct dsmem_conn *conn)
{
	struct dsmem_node *node = conn->peer->node;
	unsigned int i = node->svc_ready;

	while (i--)
		if (dsmem_services[i]->conn_down &&
		    dsmem_service_on(dsmem_services[i], conn))
			dsmem_services[i]->conn_down(conn, node->svc_priv[i]);
}

/* The entry serving a request opcode, and its service's state of @node. */
const struct dsmem_msg_op *dsmem_services_op(u8 opcode, void **priv,
					     const struct dsmem_conn *conn)
{
	if (opcode > DSMEM_WIRE_OP_MAX || !dsmem_msg_routes[opcode].op ||
	    !dsmem_service_on(dsmem_msg_routes[opcode].svc, conn))
		return NULL;
	*priv = conn->peer->node->svc_priv[dsmem_msg_routes[opcode].svc->index];
	return dsmem_msg_routes[opcode].op;
}
