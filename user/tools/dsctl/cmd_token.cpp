// SPDX-License-Identifier: BSD-2-Clause
// dsctl token [show [type pd|mr|cq|qp|db|wqe] [node N] [handle H]]
//      | token set handle H [pin | unpin] [layer l1|l2|l3] [version V]
#include <linux/dsmem.h>

#include "dsctl.hpp"

namespace dsctl {

namespace {

uint32_t handle_of(const std::string &v)
{
	uint32_t h;
	if (!parse_handle(v, h))
		fail("handle needs a token handle, such as 0xc0010002");
	return h;
}

int token_show(env &e)
{
	keywords kw = take_keywords(e, { "type", "node", "handle" });
	int type = -1;
	if (const std::string *v = kw.get("type"); v && !parse_token_type(*v, type))
		fail("type needs \"pd\", \"mr\", \"cq\", \"qp\", \"db\" or \"wqe\"");
	uint32_t node = 0;
	id_arg(kw, "node", DSMEM_NODE_ID_MAX, "node id", node);
	const std::string *h = kw.get("handle");
	if (h && (type >= 0 || node))
		fail("a handle names one token: token show handle H");
	uint32_t handle = h ? handle_of(*h) : 0;
	dsmem::context ctx = open_context();

	e.out.begin_list();
	if (!h) {
		c_array<ds_token_info> tokens;
		check(ds_token_list(ctx.get(), type, node, &tokens.data, &tokens.count), ctx,
		      "cannot list tokens");
		for (const auto &t : tokens)
			e.out.add(token_record(t));
		return 0;
	}
	ds_token_info t{};
	check(ds_token_get(ctx.get(), handle, &t), ctx,
	      "cannot show token " + handle_string(handle));
	e.out.add(token_record(t));
	return 0;
}

int token_set(env &e)
{
	keywords kw;
	std::string err;
	if (!kw.parse(e.words, { "handle", "layer", "version" }, err, { "pin", "unpin" }))
		fail(err);
	uint32_t handle = handle_of(need(kw, "handle", "token"));
	ds_token_update u{};

	if (kw.has("pin") && kw.has("unpin"))
		fail("give at most one of pin and unpin");
	if (kw.has("pin") || kw.has("unpin")) {
		u.mask |= DS_TOKEN_SET_PINNED;
		u.pinned = kw.has("pin");
	}
	if (const std::string *v = kw.get("layer")) {
		if (!parse_tier(*v, u.layer))
			fail("layer needs \"l1\", \"l2\" or \"l3\"");
		u.mask |= DS_TOKEN_SET_LAYER;
	}
	if (const std::string *v = kw.get("version")) {
		unsigned int ver;
		if (!parse_u32(*v, ver))
			fail("version needs the directory version the token is expected at");
		u.version = ver;
		u.mask |= DS_TOKEN_SET_VERSION;
	}
	if (!(u.mask & (DS_TOKEN_SET_PINNED | DS_TOKEN_SET_LAYER)))
		fail("nothing to change: give pin, unpin or layer, try \"dsctl token help\"");

	dsmem::context ctx = open_context();
	ds_token_info t{};
	check(ds_token_set(ctx.get(), handle, &u, &t), ctx,
	      "cannot change token " + handle_string(handle));
	e.out.begin_list();
	e.out.add(token_record(t));
	return 0;
}

const command token_cmds[] = {
	{ "show", token_show },
	{ "list", token_show },
	{ "set", token_set },
};

}  // namespace

const object token_object = {
	"token", token_cmds, sizeof(token_cmds) / sizeof(token_cmds[0]),
	"Usage: dsctl token [show [type TYPE] [node N] [handle H]]\n"
	"       dsctl token set handle H [{ pin | unpin }] [layer TIER] [version V]\n"
	"where  TYPE := { pd | mr | cq | qp | db | wqe }   TIER := { l1 | l2 | l3 }\n"
	"       H := 0xHEX or a decimal number\n",
	false,
};

}  // namespace dsctl
