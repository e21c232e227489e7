// SPDX-License-Identifier: BSD-2-Clause
// dsctl key [show] | key add name NAME file FILE [replace] | key del name NAME
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "dsctl.hpp"

namespace dsctl {

namespace {

record key_record(const ds_key_info &k)
{
	record r;

	r["key"] = k.name;
	r["len"] = k.len;
	return r;
}

int key_show(env &e)
{
	keywords kw = take_keywords(e, { "name" });
	const std::string *name = kw.get("name");
	dsmem::context ctx = open_context();
	c_array<ds_key_info> keys;

	check(ds_key_list(ctx.get(), &keys.data, &keys.count), ctx, "cannot list keys");
	e.out.begin_list();
	bool found = false;
	for (const auto &k : keys)
		if (!name || *name == k.name) {
			e.out.add(key_record(k));
			found = true;
		}
	if (name && !found)
		fail("no key \"" + *name + "\"");
	return 0;
}

// The secret: the bytes of FILE ("-": standard input), which must not be
// readable by anyone but its owner, as ssh asks of a private key.
std::vector<uint8_t> read_key(const std::string &path)
{
	int fd = path == "-" ? dup(STDIN_FILENO) : open(path.c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fail("cannot read " + path + ": " + strerror(errno));
	struct stat st;
	if (fstat(fd, &st) || (path != "-" && (st.st_mode & 077))) {
		close(fd);
		fail(path + " is readable by others: chmod 600 it (it holds a key)");
	}
	std::vector<uint8_t> key(DS_KEY_MAX + 1);
	size_t len = 0;
	while (len < key.size()) {
		ssize_t n = read(fd, key.data() + len, key.size() - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			close(fd);
			fail("cannot read " + path + ": " + strerror(err));
		}
		if (n == 0)
			break;
		len += size_t(n);
	}
	close(fd);
	if (len < DS_KEY_MIN || len > DS_KEY_MAX) {
		explicit_bzero(key.data(), key.size());
		fail("a key is " + std::to_string(DS_KEY_MIN) + " to " + std::to_string(DS_KEY_MAX) +
		     " bytes; " + path + " has " + (len > DS_KEY_MAX ? "more" : std::to_string(len)) +
		     " (make one with: head -c 32 /dev/urandom > FILE)");
	}
	key.resize(len);
	return key;
}

int key_add(env &e)
{
	keywords kw = take_keywords(e, { "name", "file" }, { "replace" });
	const std::string &name = need(kw, "name", "key");
	std::vector<uint8_t> key = read_key(need(kw, "file", "key"));
	dsmem::context ctx = open_context();
	int ret = ds_key_add(ctx.get(), name.c_str(), key.data(), key.size(), kw.has("replace"));
	explicit_bzero(key.data(), key.size());
	check(ret, ctx, "cannot add key \"" + name + "\"");
	return 0;
}

int key_del(env &e)
{
	keywords kw = take_keywords(e, { "name" });
	const std::string &name = need(kw, "name", "key");
	dsmem::context ctx = open_context();
	check(ds_key_del(ctx.get(), name.c_str()), ctx, "cannot delete key \"" + name + "\"");
	return 0;
}

const command key_cmds[] = {
	{ "show", key_show },
	{ "list", key_show },
	{ "add", key_add },
	{ "del", key_del },
};

}  // namespace

const object key_object = {
	"key", key_cmds, sizeof(key_cmds) / sizeof(key_cmds[0]),
	"Usage: dsctl key [show [name NAME]]\n"
	"       dsctl key add name NAME file FILE [replace]\n"
	"       dsctl key del name NAME\n"
	"FILE holds the key's 16 to 64 bytes (\"-\": standard input), e.g. from\n"
	"       head -c 32 /dev/urandom > FILE; chmod 600 FILE\n",
	false,
};

}  // namespace dsctl
