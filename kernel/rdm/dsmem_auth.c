// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dsmem: keys, and the proofs that authenticate a connection.
 *
 * An administrator installs keys by name in a network namespace (netlink
 * KEY_NEW, CAP_NET_ADMIN there); a node names the key its peers must
 * prove.  A key is never sent back: a dump gives its name and length.
 * Each key keeps its own keyed hmac(sha256) transform, which digests
 * concurrently without a lock, and the transform zeroes its copy of the
 * key when freed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <crypto/hash.h>
#include <linux/slab.h>
#include <net/genetlink.h>
#include <net/netns/generic.h>

#include "../dsmem_netlink.h"
#include "dsmem_rdm.h"

struct dsmem_key {
	struct list_head link;
	struct kref ref;		/* the list's, and each digest's */
	char name[DSMEM_KEY_NAME_MAX];
	u32 len;
	struct crypto_shash *tfm;
};

/* Keys of one network namespace. */
struct dsmem_key_net {
	struct mutex lock;		/* the list; a leaf */
	struct list_head keys;
	unsigned int nkeys;
};

static unsigned int dsmem_key_net_id;

static struct dsmem_key_net *dsmem_key_net(struct net *net)
{
	return net_generic(net, dsmem_key_net_id);
}

static void dsmem_key_release(struct kref *ref)
{
	struct dsmem_key *key = container_of(ref, struct dsmem_key, ref);

	crypto_free_shash(key->tfm);
	kfree(key);
}

static void dsmem_key_put(struct dsmem_key *key)
{
	kref_put(&key->ref, dsmem_key_release);
}

static struct dsmem_key *dsmem_key_find(struct dsmem_key_net *kn, const char *name)
{
	struct dsmem_key *key;

	lockdep_assert_held(&kn->lock);
	list_for_each_entry(key, &kn->keys, link)
		if (!strcmp(key->name, name))
			return key;
	return NULL;
}

static struct dsmem_key *dsmem_key_get(struct net *net, const char *name)
{
	struct dsmem_key_net *kn = dsmem_key_net(net);
	struct dsmem_key *key;

	mutex_lock(&kn->lock);
	key = dsmem_key_find(kn, name);
	if (key)
		kref_get(&key->ref);
	mutex_unlock(&kn->lock);
	return key;
}

bool dsmem_key_exists(struct net *net, const char *name)
{
	struct dsmem_key *key = dsmem_key_get(net, name);

	if (key)
		dsmem_key_put(key);
	return key;
}

/*
 * The proof of one end of a connection (struct dsmem_wire_cm); -ENOKEY
 * when the namespace has no key of the name (removed since the node was
 * made).
 */
int dsmem_auth_proof(struct net *net, const char *name,
		     const struct dsmem_wire_auth_info *a,
		     u8 proof[DSMEM_WIRE_AUTH_LEN])
{
	u8 input[DSMEM_WIRE_AUTH_INPUT_LEN];
	struct dsmem_key *key;
	int ret;

	key = dsmem_key_get(net, name);
	if (!key)
		return -ENOKEY;
	dsmem_wire_auth_input(input, a);
	{
		SHASH_DESC_ON_STACK(desc, key->tfm);

		desc->tfm = key->tfm;
		ret = crypto_shash_digest(desc, input, sizeof(input), proof);
		shash_desc_zero(desc);
	}
	dsmem_key_put(key);
	return ret;
}

static int dsmem_key_add(struct net *net, const char *name, const u8 *data,
			 u32 len, bool replace, struct netlink_ext_ack *extack)
{
	struct dsmem_key_net *kn = dsmem_key_net(net);
	struct dsmem_key *key, *old;
	int ret;

	key = kzalloc(sizeof(*key), GFP_KERNEL);
	if (!key)
		return -ENOMEM;
	kref_init(&key->ref);
	strscpy(key->name, name, sizeof(key->name));
	key->len = len;
	key->tfm = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(key->tfm)) {
		ret = PTR_ERR(key->tfm);
		NL_SET_ERR_MSG(extack, "the kernel has no hmac(sha256)");
		goto err_free_key;
	}
	ret = crypto_shash_setkey(key->tfm, data, len);
	if (ret)
		goto err_free_tfm;

	mutex_lock(&kn->lock);
	old = dsmem_key_find(kn, name);
	if (old && !replace) {
		mutex_unlock(&kn->lock);
		NL_SET_ERR_MSG(extack, "a key of this name exists (replace it with replace)");
		ret = -EEXIST;
		goto err_free_tfm;
	}
	if (!old && kn->nkeys >= DSMEM_KEYS_MAX) {
		mutex_unlock(&kn->lock);
		NL_SET_ERR_MSG(extack, "too many keys in this network namespace");
		ret = -ENOSPC;
		goto err_free_tfm;
	}
	if (old) {
		/* connections proving the old key finish with it */
		list_replace(&old->link, &key->link);
		dsmem_key_put(old);
	} else {
		list_add_tail(&key->link, &kn->keys);
		kn->nkeys++;
	}
	mutex_unlock(&kn->lock);
	return 0;

err_free_tfm:
	crypto_free_shash(key->tfm);
err_free_key:
	kfree(key);
	return ret;
}

static int dsmem_key_del(struct net *net, const char *name,
			 struct netlink_ext_ack *extack)
{
	struct dsmem_key_net *kn = dsmem_key_net(net);
	struct dsmem_key *key;

	mutex_lock(&kn->lock);
	key = dsmem_key_find(kn, name);
	if (key) {
		list_del(&key->link);
		kn->nkeys--;
	}
	mutex_unlock(&kn->lock);
	if (!key) {
		NL_SET_ERR_MSG(extack, "no key of this name");
		return -ENOENT;
	}
	dsmem_key_put(key);
	return 0;
}

static __net_init int dsmem_key_net_init(struct net *net)
{
	struct dsmem_key_net *kn = dsmem_key_net(net);

	mutex_init(&kn->lock);
	INIT_LIST_HEAD(&kn->keys);
	return 0;
}

static __net_exit void dsmem_key_net_exit(struct net *net)
{
	struct dsmem_key_net *kn = dsmem_key_net(net);
	struct dsmem_key *key, *tmp;

	mutex_lock(&kn->lock);
	list_for_each_entry_safe(key, tmp, &kn->keys, link) {
		list_del(&key->link);
		dsmem_key_put(key);
	}
	kn->nkeys = 0;
	mutex_unlock(&kn->lock);
}

static struct pernet_operations dsmem_key_net_ops = {
	.init = dsmem_key_net_init,
	.exit = dsmem_key_net_exit,
	.id = &dsmem_key_net_id,
	.size = sizeof(struct dsmem_key_net),
};

int dsmem_auth_init(void)
{
	return register_pernet_subsys(&dsmem_key_net_ops);
}

void dsmem_auth_exit(void)
{
	unregister_pernet_subsys(&dsmem_key_net_ops);
}

/* ---- netlink */

int dsmem_nl_key_new(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *data = info->attrs[DSMEM_ATTR_KEY_DATA];

	if (GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_KEY_NAME) ||
	    GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_KEY_DATA))
		return -EINVAL;
	if (!*(char *)nla_data(info->attrs[DSMEM_ATTR_KEY_NAME])) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[DSMEM_ATTR_KEY_NAME],
				    "a key needs a name");
		return -EINVAL;
	}
	return dsmem_key_add(genl_info_net(info),
			     nla_data(info->attrs[DSMEM_ATTR_KEY_NAME]),
			     nla_data(data), nla_len(data),
			     nla_get_flag(info->attrs[DSMEM_ATTR_KEY_REPLACE]),
			     info->extack);
}

int dsmem_nl_key_del(struct sk_buff *skb, struct genl_info *info)
{
	if (GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_KEY_NAME))
		return -EINVAL;
	return dsmem_key_del(genl_info_net(info),
			     nla_data(info->attrs[DSMEM_ATTR_KEY_NAME]),
			     info->extack);
}

static int dsmem_nl_key_fill(struct sk_buff *msg, const struct dsmem_key *key,
			     u32 portid, u32 seq, int flags)
{
	void *hdr;

	hdr = genlmsg_put(msg, portid, seq, dsmem_nl_family_get(), flags,
			  DSMEM_CMD_KEY_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_string(msg, DSMEM_ATTR_KEY_NAME, key->name) ||
	    nla_put_u32(msg, DSMEM_ATTR_KEY_LEN, key->len)) {
		genlmsg_cancel(msg, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	return 0;
}

int dsmem_nl_key_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct dsmem_key_net *kn = dsmem_key_net(genl_info_net(info));
	struct dsmem_key *key;
	struct sk_buff *msg;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, DSMEM_ATTR_KEY_NAME))
		return -EINVAL;
	msg = nlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	mutex_lock(&kn->lock);
	key = dsmem_key_find(kn, nla_data(info->attrs[DSMEM_ATTR_KEY_NAME]));
	ret = key ? dsmem_nl_key_fill(msg, key, info->snd_portid,
				      info->snd_seq, 0) : -ENOENT;
	mutex_unlock(&kn->lock);
	if (ret) {
		if (ret == -ENOENT)
			NL_SET_ERR_MSG(info->extack, "no key of this name");
		nlmsg_free(msg);
		return ret;
	}
	return genlmsg_reply(msg, info);
}

/* cb->args[0]: keys already sent; the list is short and changes rarely */
int dsmem_nl_key_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct dsmem_key_net *kn = dsmem_key_net(sock_net(skb->sk));
	struct dsmem_key *key;
	long i = 0;
	int ret = 0;

	mutex_lock(&kn->lock);
	list_for_each_entry(key, &kn->keys, link) {
		if (i++ < cb->args[0])
			continue;
		ret = dsmem_nl_key_fill(skb, key, NETLINK_CB(cb->skb).portid,
					cb->nlh->nlmsg_seq, NLM_F_MULTI);
		if (ret)
			break;
		cb->args[0] = i;
	}
	mutex_unlock(&kn->lock);
	return ret == -EMSGSIZE && skb->len ? skb->len : ret ? ret : skb->len;
}
