/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dsmem: what a service on the transport plugs in.  The transport (nodes,
 * connections, messages) knows no service by name: each one registers a
 * struct dsmem_service at module init, before any node exists, and is
 * called back through it.  The segment service (dsmem_seg_msg.c) and
 * Slope (slope_fault/) are the two.
 */
#ifndef _DSMEM_SERVICE_H
#define _DSMEM_SERVICE_H

#include <linux/types.h>

#include "../dsmem_wire.h"

struct dsmem_node;
struct dsmem_conn;

/* a handler's "nothing to send back": an announcement, or answered */
#define DSMEM_MSG_NO_REPLY	1

/*
 * One request opcode a service serves.  The transport decodes the message
 * once (dsmem_wire_decode checks its size and fields), then calls .handle
 * from the connection's receive work, in arrival order, with no lock of
 * its own held.  *reply comes with .reply as its opcode and the request's
 * tag; .handle fills it and returns 0 to send it, DSMEM_MSG_NO_REPLY, or a
 * negative errno, answered with .reply_err (.reply when 0) and the status
 * alone.  Data to send along goes in *data, kmalloc'ed, freed by the
 * transport.  @priv is the service's state of the connection's node.
 */
struct dsmem_msg_op {
	u8 opcode;
	u8 reply;
	u8 reply_err;
	int (*handle)(struct dsmem_conn *conn, void *priv,
		      const struct dsmem_wire_msg *m,
		      struct dsmem_wire_msg *reply, void **data);
};

/*
 * A service.  Every hook is optional.  Nodes: .node_init makes the
 * service's state of a node (*priv), under dsmem_nodes_lock, before the
 * node is published; .node_dead runs once the node is unlinked and its
 * connections are closed, without our locks; .node_fini frees the state at
 * the node's last reference.  Connections: .conn_up once a connection to
 * an authenticated peer is up, .conn_down as it closes, after it drained
 * (nothing of it completes any more), both from the module's workqueue.
 * Services are called in the order they registered, and in the reverse
 * order for what undoes (node_dead, node_fini, conn_down).  A peer's
 * other paths (dsmem_path.c) are connections too: only a service with
 * .paths hears of them and is served on them; to the others a peer is
 * its first connection.
 */
struct dsmem_service {
	const char *name;
	int (*node_init)(struct dsmem_node *node, void **priv);
	void (*node_dead)(struct dsmem_node *node, void *priv);
	void (*node_fini)(struct dsmem_node *node, void *priv);
	void (*conn_up)(struct dsmem_conn *conn, void *priv);
	void (*conn_down)(struct dsmem_conn *conn, void *priv);
	const struct dsmem_msg_op *ops;
	unsigned int nops;
	bool paths;
	unsigned int index;		/* the transport's: its slot */
};

int dsmem_service_register(struct dsmem_service *svc);
void dsmem_service_unregister(struct dsmem_service *svc);

/* The service's state of a node (what .node_init made). */
void *dsmem_node_priv(const struct dsmem_node *node,
		      const struct dsmem_service *svc);

/* The transport's side: called by nodes, connections and messages. */
int dsmem_services_node_init(struct dsmem_node *node);
void dsmem_services_node_dead(struct dsmem_node *node);
void dsmem_services_node_fini(struct dsmem_node *node);
void dsmem_services_conn_up(struct dsmem_conn *conn);
void dsmem_services_conn_down(struct dsmem_conn *conn);
const struct dsmem_msg_op *dsmem_services_op(u8 opcode, void **priv,
					     const struct dsmem_conn *conn);

#endif /* _DSMEM_SERVICE_H */
