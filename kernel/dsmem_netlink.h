/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dsmem: the netlink plumbing (dsmem_netlink.c) that every layer's
 * handlers and events use: the family, replies and multicast.
 */
#ifndef _DSMEM_NETLINK_H
#define _DSMEM_NETLINK_H

#include <net/genetlink.h>

/* the netlink handlers, declared with the op table that names them */
#include "dsmem_nl_gen.h"

struct dsmem_device;

/* dsmem_netlink.c */
int dsmem_nl_init(void);
void dsmem_nl_exit(void);
void dsmem_nl_notify_dev(struct dsmem_device *sdev, u8 cmd);
struct genl_family *dsmem_nl_family_get(void);
struct sk_buff *dsmem_nl_reply_new(struct genl_info *info, u8 cmd,
				   void **hdr);
int dsmem_nl_reply_send(struct genl_info *info, struct sk_buff *msg, int ret);
struct dsmem_device *dsmem_nl_find_dev(struct genl_info *info);
struct dsmem_device *dsmem_nl_find_dev_by(struct net *net, struct nlattr *idx,
					  struct nlattr *name,
					  struct netlink_ext_ack *extack);
void dsmem_nl_multicast(struct net *net, struct sk_buff *skb);
struct net *dsmem_nl_target_net(struct sock *sk, struct nlattr *netnsid,
				struct netlink_ext_ack *extack);

#endif /* _DSMEM_NETLINK_H */
