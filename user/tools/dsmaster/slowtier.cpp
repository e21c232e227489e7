// SPDX-License-Identifier: BSD-2-Clause
// DirTier: PATH/<2 hex digits of a hash>/<escaped key>, one file per key.
//
// Escaping keeps [A-Za-z0-9._-] and writes every other byte as %XX, so any
// key (up to 1024 bytes, no NUL) maps to one name and back.  An escaped
// name too long for the file system is cut and ends in ~ and a hash of the
// whole key; the file's header holds the key itself.  Cut names can
// collide (two long keys with the same first bytes and the same hash), so
// they are chained: slot 0 is the cut name, slot n the cut name and ".n".
// A key's file is the slot whose header holds the key; a put of a key the
// chain does not hold takes the first free slot, and a delete moves the
// chain's last file into the slot it frees, so the chain has no holes.
// A cut name is exactly kMaxName long and holds '~' (which escaping never
// writes), and slots 1 and up are longer: no escaped name is one of them.
// The hash's low byte picks the subdirectory, 256 of them.  Names starting
// with '.' are ours (an escaped key never starts with one).
//
// File (format 2): header {magic, format, version, size, crc32c of the
// data, key length}, the key, a table of one crc32c per kChunk (1 MiB) of
// data, the data.  Every read checks the CRCs of the chunks it touches
// (reading whole chunks), so the client's chunked reads are verified too.
// Format 1 files (no table) are still read: a partial read of one checks
// the whole object.
//
// A put writes PATH/xx/.name.tmp.<host>.<pid>.<n>, fsyncs it, and then,
// holding PATH/xx/.lock (flock LOCK_EX), looks the key up again, renames
// the tmp file over the key's file (or into a free slot) unless that is as
// new, and fsyncs the directory: a crash leaves the old copy or the new one.
// The flock is what makes "never goes backwards" hold between processes (an
// old leader and a new one on the same directory, also over NFS, where
// Linux maps flock to POSIX locks); a mutex picked by the key's hash
// serializes the threads of one process in front of it.  Deletes take both
// too.  Reads take neither, but a read of a chained key that finds nothing
// looks again under the flock (LOCK_SH): a delete may have been moving the
// file it wanted from one slot to another.
//
// A damaged file (its header unreadable) under a name that is not cut is
// the key's own and is replaced by its next put; in a chain it could be
// any key's, so it is left alone (the key goes to a free slot) and a read
// that finds nothing else says -EIO.
//
// Opening the tier removes tmp files a crash left behind: those of this
// host whose process is gone, and any older than kStaleTmp (another host's,
// a reused pid, an older naming).
//
// PATH/.dsmem-tier-id names the tree ("dsmem-slow-tier <32 hex digits>"):
// the first master to open it writes a random id to a tmp file and links
// it there (link(2) fails if another got there first, also over NFS; then
// that one's is read), so every master reaching the tree, by any path,
// reads the same id, and masters with trees of their own read different
// ones.
#include "slowtier.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <dirent.h>
#include <mutex>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <vector>

#include <sys/random.h>

#include "etcd.hpp"
#include "persist.hpp"	// crc32c, fsync_dir

namespace dsmem::store {

namespace {

constexpr uint32_t kObjMagic = 0x424f5344;	// "DSOB"
constexpr uint32_t kObjFormat = 2;	// 1: no chunk CRC table
constexpr size_t kObjHeader = 4 + 4 + 8 + 8 + 4 + 4;	// magic format version size crc keylen
constexpr uint64_t kChunk = 1 << 20;	// one CRC per this many bytes of data
constexpr size_t kMaxName = 200;	// of NAME_MAX 255, room for ".tmp.<host>.<pid>.<n>"
constexpr time_t kStaleTmp = 60 * 60;	// a tmp file this old is a crash's, whoever wrote it
constexpr char kIdFile[] = ".dsmem-tier-id";
constexpr char kIdTag[] = "dsmem-slow-tier ";

uint64_t fnv1a(const std::string &s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (unsigned char c : s)
		h = (h ^ c) * 0x100000001b3ull;
	return h;
}

std::string escape(const std::string &key)
{
	static const char hex[] = "0123456789ABCDEF";
	std::string out;

	for (unsigned char c : key) {
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '.' || c == '_' || c == '-') {
			out += static_cast<char>(c);
		} else {
			out += '%';
			out += hex[c >> 4];
			out += hex[c & 15];
		}
	}
	// "." and ".." are not files; a leading '.' is our tmp files' mark
	if (!out.empty() && out[0] == '.')
		out.replace(0, 1, "%2E");
	return out;
}

struct Header {
	uint64_t version = 0, size = 0;
	uint32_t crc = 0, format = 0;
	std::string key;
	uint64_t chunks() const { return format >= 2 ? (size + kChunk - 1) / kChunk : 0; }
	// where the chunk table and the data start
	uint64_t table_off() const { return kObjHeader + key.size(); }
	uint64_t data_off() const { return table_off() + 4 * chunks(); }
};

int read_exact(int fd, void *buf, size_t len, off_t off)
{
	char *p = static_cast<char *>(buf);

	while (len) {
		ssize_t n = pread(fd, p, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;	// shorter than its header says
		p += n;
		len -= static_cast<size_t>(n);
		off += n;
	}
	return 0;
}

int write_exact(int fd, const void *buf, size_t len)
{
	const char *p = static_cast<const char *>(buf);

	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= static_cast<size_t>(n);
	}
	return 0;
}

int read_header(int fd, Header *h)
{
	char buf[kObjHeader];

	if (int ret = read_exact(fd, buf, sizeof(buf), 0))
		return ret;
	uint32_t magic, format, keylen;
	memcpy(&magic, buf, 4);
	memcpy(&format, buf + 4, 4);
	memcpy(&h->version, buf + 8, 8);
	memcpy(&h->size, buf + 16, 8);
	memcpy(&h->crc, buf + 24, 4);
	memcpy(&keylen, buf + 28, 4);
	if (magic != kObjMagic || (format != 1 && format != kObjFormat) || keylen > 4096)
		return -EIO;
	h->format = format;
	h->key.resize(keylen);
	return read_exact(fd, h->key.data(), keylen, kObjHeader);
}

// A short tag of this host's name, so a tmp file's pid is only judged
// (alive or not) on the host that wrote it.
const std::string &host_tag()
{
	static const std::string tag = [] {
		char name[256] = "";
		gethostname(name, sizeof(name) - 1);
		char buf[16];
		snprintf(buf, sizeof(buf), "%08x", static_cast<unsigned>(fnv1a(name) & 0xffffffffu));
		return std::string(buf);
	}();
	return tag;
}

// PATH/xx/.lock, flock'ed (exclusively, or shared for a reader) for as
// long as it lives.
class DirLock {
public:
	int lock(const std::string &dir, bool shared = false)
	{
		std::string p = dir + "/.lock";
		fd_ = open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd_ < 0)
			return -errno;
		while (flock(fd_, shared ? LOCK_SH : LOCK_EX)) {
			if (errno != EINTR)
				return -errno;
		}
		return 0;
	}
	~DirLock()
	{
		if (fd_ >= 0)
			close(fd_);	// drops the flock
	}

private:
	int fd_ = -1;
};

// Removes the tmp files of dead writers in one fan-out directory.
void clean_tmp(const std::string &dir)
{
	DIR *d = opendir(dir.c_str());
	if (!d)
		return;
	time_t now = time(nullptr);
	std::vector<std::string> victims;
	while (struct dirent *e = readdir(d)) {
		std::string name = e->d_name;
		size_t t = name.rfind(".tmp.");
		if (name.size() < 2 || name[0] != '.' || t == std::string::npos || t == 0)
			continue;
		struct stat st;
		std::string p = dir + "/" + name;
		if (lstat(p.c_str(), &st) || !S_ISREG(st.st_mode))
			continue;
		bool stale = now - st.st_mtime > kStaleTmp;
		// .<name>.tmp.<host>.<pid>.<n>
		char host[16];
		int pid = 0;
		unsigned long long n;
		if (!stale && sscanf(name.c_str() + t, ".tmp.%8[0-9a-f].%d.%llu", host, &pid, &n) == 3 &&
		    host_tag() == host && pid > 0 && pid != getpid() && kill(pid, 0) && errno == ESRCH)
			stale = true;
		if (stale)
			victims.push_back(p);
	}
	closedir(d);
	for (const std::string &v : victims)
		unlink(v.c_str());	// best effort
}

// The tree's id, made if it has none: 0, or -errno with *err.
int tier_id(const std::string &root, std::string *id, std::string *err)
{
	const std::string path = root + "/" + kIdFile;
	for (int tries = 0; tries < 2; tries++) {
		int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			char buf[128];
			ssize_t n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			std::string s(buf, n > 0 ? static_cast<size_t>(n) : 0);
			size_t tag = strlen(kIdTag);
			if (s.size() == tag + 33 && !s.compare(0, tag, kIdTag) && s.back() == '\n' &&
			    s.find_first_not_of("0123456789abcdef", tag) == tag + 32) {
				*id = s.substr(tag, 32);
				return 0;
			}
			*err = path + " is damaged (want \"" + kIdTag + "\" and 32 hex digits)";
			return -EIO;
		}
		if (errno != ENOENT) {
			*err = path + ": " + strerror(errno);
			return -errno;
		}
		// none yet: ours, unless another master links its own first
		unsigned char rnd[16];
		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
			*err = std::string("getrandom: ") + strerror(errno);
			return -EIO;
		}
		std::string line = kIdTag;
		for (unsigned char c : rnd) {
			char h[3];
			snprintf(h, sizeof(h), "%02x", c);
			line += h;
		}
		line += '\n';
		// a name of its own: threads of one process may race here too
		static std::atomic<uint64_t> seq{ 0 };
		char suffix[64];
		snprintf(suffix, sizeof(suffix), ".tmp.%s.%d.%llu", host_tag().c_str(),
			 static_cast<int>(getpid()), static_cast<unsigned long long>(seq++));
		const std::string tmp = path + suffix;
		fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			*err = tmp + ": " + strerror(errno);
			return -errno;
		}
		int ret = write_exact(fd, line.data(), line.size());
		if (!ret && fsync(fd))
			ret = -errno;
		close(fd);
		if (!ret && link(tmp.c_str(), path.c_str()) && errno != EEXIST)
			ret = -errno;
		unlink(tmp.c_str());
		if (!ret)
			ret = fsync_dir(root);
		if (ret) {
			*err = path + ": " + strerror(-ret);
			return ret;
		}
	}
	*err = path + " cannot be read back";
	return -EIO;
}

class DirTier : public SlowTier {
public:
	DirTier(std::string root, std::string id) : root_(std::move(root)), id_(std::move(id)) {}

	int put(const std::string &key, uint64_t version, const void *data, uint64_t len,
		uint64_t *held = nullptr) override;
	int get(const std::string &key, uint64_t off, uint64_t len, std::string *data, uint64_t *version,
		uint64_t *size) override;
	int version(const std::string &key, uint64_t *version, uint64_t *size) override;
	int del(const std::string &key) override { return del_if(key, nullptr); }
	int del_version(const std::string &key, uint64_t version) override
	{
		return del_if(key, &version);
	}
	std::string describe() const override { return "dir:" + root_; }
	std::string id() const override { return id_; }

private:
	struct Place {
		std::string dir, name;
		uint64_t hash;
		bool cut = false;	// name cut to kMaxName: chained
		std::string path(unsigned slot = 0) const
		{
			return dir + "/" + name + (slot ? "." + std::to_string(slot) : "");
		}
	};
	Place place(const std::string &key) const;
	// Opens path: 0 with its header if the file is this key's, 1 if it is
	// another key's, -ENOENT if there is none, -EIO if it is damaged.
	int open_path(const std::string &path, const std::string &key, int *fd, Header *h);
	// The key's file: 0 with *fd, *h and *slot.  Else -ENOENT, or -EIO
	// (a damaged file that may be the key's), and *end the free slot a
	// put of the key takes.
	int find_key(const Place &pl, const std::string &key, int *fd, Header *h, unsigned *slot,
		     unsigned *end);
	// find_key, and once more under the flock if a chain held nothing.
	int lookup(const Place &pl, const std::string &key, int *fd, Header *h);
	std::mutex &lock_for(const Place &pl) { return locks_[pl.hash % locks_.size()]; }
	// del, or del_version when version is given
	int del_if(const std::string &key, const uint64_t *version);

	std::string root_, id_;
	std::array<std::mutex, 64> locks_;
};

// per process, not per tier: two tiers on one directory in one process
// must not pick the same tmp name
std::atomic<uint64_t> tmp_seq{ 0 };

DirTier::Place DirTier::place(const std::string &key) const
{
	Place pl;
	char sub[8];

	pl.hash = fnv1a(key);
	snprintf(sub, sizeof(sub), "%02x", static_cast<unsigned>(pl.hash & 0xff));
	pl.dir = root_ + "/" + sub;
	pl.name = escape(key);
	if (pl.name.size() > kMaxName) {
		char tail[24];
		snprintf(tail, sizeof(tail), "~%016llx", static_cast<unsigned long long>(pl.hash));
		pl.name = pl.name.substr(0, kMaxName - 17) + tail;
		pl.cut = true;
	}
	return pl;
}

int DirTier::open_path(const std::string &path, const std::string &key, int *fd, Header *h)
{
	*fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	int ret = read_header(*fd, h);
	if (!ret && h->key != key)
		ret = 1;	// a cut name's hash collision: another key's file
	if (ret) {
		close(*fd);
		*fd = -1;
	}
	return ret;
}

int DirTier::find_key(const Place &pl, const std::string &key, int *fd, Header *h, unsigned *slot,
		      unsigned *end)
{
	bool damaged = false;

	*end = 0;
	for (unsigned n = 0;; n++) {
		int ret = open_path(pl.path(n), key, fd, h);
		if (ret == 0) {
			*slot = n;
			return 0;
		}
		if (!pl.cut)	// one file, the key's or none
			return ret == 1 ? -ENOENT : ret;
		if (ret == -ENOENT) {
			*end = n;
			return damaged ? -EIO : -ENOENT;
		}
		if (ret == -EIO)
			damaged = true;	// whose? keep looking
		else if (ret != 1)
			return ret;
	}
}

int DirTier::lookup(const Place &pl, const std::string &key, int *fd, Header *h)
{
	unsigned slot, end;
	int ret = find_key(pl, key, fd, h, &slot, &end);

	if (pl.cut && (ret == -ENOENT || ret == -EIO)) {
		DirLock dl;
		if (dl.lock(pl.dir, true))
			return ret;	// no subdirectory: no such key
		ret = find_key(pl, key, fd, h, &slot, &end);
	}
	return ret;
}

int DirTier::put(const std::string &key, uint64_t version, const void *data, uint64_t len,
		 uint64_t *held)
{
	uint64_t ignored;
	if (!held)
		held = &ignored;
	if (key.empty() || key.find('\0') != std::string::npos)
		return -EINVAL;
	Place pl = place(key);
	std::lock_guard g(lock_for(pl));
	int fd;
	Header old;
	unsigned slot = 0, end = 0;

	// a cheap look first: an old version costs no write (checked again,
	// under the directory's flock, before the rename)
	int ret = find_key(pl, key, &fd, &old, &slot, &end);
	if (ret == 0) {
		close(fd);
		if (old.version >= version) {
			*held = old.version;
			return 0;	// never backwards
		}
	} else if (ret != -ENOENT && ret != -EIO) {
		return ret;	// a damaged old copy (-EIO) is simply replaced
	}
	if (mkdir(pl.dir.c_str(), 0755) == 0) {
		if ((ret = fsync_dir(root_)))
			return ret;
	} else if (errno != EEXIST) {
		return -errno;
	}
	char suffix[64];
	snprintf(suffix, sizeof(suffix), ".tmp.%s.%d.%llu", host_tag().c_str(), static_cast<int>(getpid()),
		 static_cast<unsigned long long>(tmp_seq++));
	std::string tmp = pl.dir + "/." + pl.name + suffix;
	fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	const char *bytes = static_cast<const char *>(data);
	uint64_t chunks = (len + kChunk - 1) / kChunk;
	std::string table(4 * chunks, '\0');
	uint32_t crc = 0;
	for (uint64_t i = 0; i < chunks; i++) {
		uint64_t n = std::min(kChunk, len - i * kChunk);
		uint32_t c = crc32c(0, bytes + i * kChunk, n);
		memcpy(&table[4 * i], &c, 4);
		crc = crc32c(crc, bytes + i * kChunk, n);
	}
	char hdr[kObjHeader];
	uint32_t magic = kObjMagic, format = kObjFormat, keylen = static_cast<uint32_t>(key.size());
	memcpy(hdr, &magic, 4);
	memcpy(hdr + 4, &format, 4);
	memcpy(hdr + 8, &version, 8);
	memcpy(hdr + 16, &len, 8);
	memcpy(hdr + 24, &crc, 4);
	memcpy(hdr + 28, &keylen, 4);
	ret = write_exact(fd, hdr, sizeof(hdr));
	if (!ret)
		ret = write_exact(fd, key.data(), key.size());
	if (!ret)
		ret = write_exact(fd, table.data(), table.size());
	if (!ret)
		ret = write_exact(fd, data, len);
	if (!ret && fsync(fd))
		ret = -errno;
	close(fd);
	bool renamed = false;
	if (!ret) {
		// another process (an old leader, a new one) may have put a
		// newer version since the look above
		DirLock dl;
		ret = dl.lock(pl.dir);
		if (!ret) {
			ret = find_key(pl, key, &fd, &old, &slot, &end);
			if (ret == 0) {
				close(fd);
				if (old.version >= version) {
					unlink(tmp.c_str());
					*held = old.version;
					return 0;	// never backwards
				}
			} else {
				slot = end;	// a free slot, never another key's file
			}
			if (ret == 0 || ret == -ENOENT || ret == -EIO)
				ret = rename(tmp.c_str(), pl.path(slot).c_str()) ? -errno : 0;
			renamed = !ret;
			// the directory fsync under the lock too: the next
			// holder's rename must not reach the disk before ours
			if (renamed)
				ret = fsync_dir(pl.dir);
		}
	}
	if (ret && !renamed)
		unlink(tmp.c_str());	// ENOSPC and friends: the old copy stays as it was
	if (!ret)
		*held = version;
	return ret;
}

int DirTier::get(const std::string &key, uint64_t off, uint64_t len, std::string *data,
		 uint64_t *version, uint64_t *size)
{
	Place pl = place(key);
	int fd;
	Header h;

	if (int ret = lookup(pl, key, &fd, &h))
		return ret;
	if (off > h.size) {
		close(fd);
		return -ERANGE;
	}
	uint64_t n = std::min(len, h.size - off);
	// the header names the version of exactly these bytes: a rename
	// replaces the whole file, and our fd keeps the one we opened.  Read
	// whole chunks (format 1: the whole object) so their CRCs can be checked.
	uint64_t from = 0, to = h.size;
	if (h.format >= 2 && n) {
		from = off / kChunk * kChunk;
		to = std::min(h.size, (off + n + kChunk - 1) / kChunk * kChunk);
	} else if (h.format >= 2) {
		from = to = off;
	}
	std::string buf, table;
	buf.resize(to - from);
	int ret = read_exact(fd, buf.data(), buf.size(), static_cast<off_t>(h.data_off() + from));
	if (!ret && h.format >= 2 && to > from) {
		uint64_t c0 = from / kChunk, c1 = (to - 1) / kChunk;
		table.resize(4 * (c1 - c0 + 1));
		ret = read_exact(fd, table.data(), table.size(), static_cast<off_t>(h.table_off() + 4 * c0));
		for (uint64_t c = c0; !ret && c <= c1; c++) {
			uint64_t at = (c - c0) * kChunk;
			uint32_t want;
			memcpy(&want, &table[4 * (c - c0)], 4);
			if (crc32c(0, buf.data() + at, std::min(kChunk, buf.size() - at)) != want)
				ret = -EIO;
		}
	}
	close(fd);
	if (ret)
		return ret;
	if (h.format < 2 && crc32c(0, buf.data(), buf.size()) != h.crc)
		return -EIO;
	if (data) {
		if (from != off || buf.size() != n)
			buf = buf.substr(off - from, n);
		*data = std::move(buf);
	}
	if (version)
		*version = h.version;
	if (size)
		*size = h.size;
	return 0;
}

int DirTier::version(const std::string &key, uint64_t *version, uint64_t *size)
{
	Place pl = place(key);
	int fd;
	Header h;

	if (int ret = lookup(pl, key, &fd, &h))
		return ret;
	close(fd);
	if (version)
		*version = h.version;
	if (size)
		*size = h.size;
	return 0;
}

int DirTier::del_if(const std::string &key, const uint64_t *version)
{
	Place pl = place(key);
	std::lock_guard g(lock_for(pl));
	int fd;
	Header h;
	DirLock dl;
	unsigned slot = 0, end = 0;

	if (int ret = dl.lock(pl.dir))
		return ret;	// -ENOENT: no subdirectory, no such key
	if (int ret = find_key(pl, key, &fd, &h, &slot, &end)) {
		// a damaged file is the key's only under a name of its own
		if (ret != -EIO || pl.cut || version)
			return ret;	// (nor is a damaged file known to be of version)
	} else {
		close(fd);
		if (version && h.version != *version)
			return -ESTALE;
	}
	// the chain's last file moves into the slot (one rename, which
	// replaces the key's file): no hole for a later lookup to stop at
	unsigned last = slot;
	struct stat st;
	while (pl.cut && !lstat(pl.path(last + 1).c_str(), &st))
		last++;
	if (last > slot ? rename(pl.path(last).c_str(), pl.path(slot).c_str())
			: unlink(pl.path(slot).c_str()))
		return -errno;
	return fsync_dir(pl.dir);
}

}  // namespace

std::unique_ptr<SlowTier> open_slow_tier(const std::string &spec, std::string *err)
{
	size_t colon = spec.find(':');
	std::string scheme = colon == std::string::npos ? "" : spec.substr(0, colon);
	std::string rest = colon == std::string::npos ? spec : spec.substr(colon + 1);

	if (scheme == "dir") {
		while (rest.size() > 1 && rest.back() == '/')
			rest.pop_back();
		if (rest.empty()) {
			*err = "slow tier " + spec + ": dir: needs a path";
			return nullptr;
		}
		// create the tree; the last component must be a directory we can write
		if (int ret = mkdir_p(rest)) {
			*err = "slow tier " + rest + ": " + strerror(-ret);
			return nullptr;
		}
		if (access(rest.c_str(), W_OK | X_OK)) {
			*err = "slow tier " + rest + ": " + strerror(errno);
			return nullptr;
		}
		std::string id, why;
		if (tier_id(rest, &id, &why)) {
			*err = "slow tier " + rest + ": " + why;
			return nullptr;
		}
		// tmp files a crash left behind
		for (unsigned i = 0; i < 256; i++) {
			char sub[8];
			snprintf(sub, sizeof(sub), "/%02x", i);
			clean_tmp(rest + sub);
		}
		return std::make_unique<DirTier>(rest, id);
	}
	*err = "slow tier " + spec + ": unknown kind (want dir:/path)";
	return nullptr;
}

int claim_slow_tier(EtcdClient &etcd, const std::string &key, const SlowTier &tier, std::string *err)
{
	bool won = false;
	int64_t rev = 0;
	std::string group;
	if (int ret = etcd.create_if_absent(key, tier.id(), 0, &won, &rev, &group, err))
		return ret;
	if (won || group == tier.id())
		return 0;
	*err = "the slow tier " + tier.describe() + " (id " + tier.id() +
	       ") is not the one the other masters use (id " + group + ", in etcd under " + key +
	       "): every master of a group must reach the same slow tier (a shared mount), since "
	       "a version flushed by one is trusted by all; or run this one with --slow-tier none";
	return -EXDEV;
}

}  // namespace dsmem::store
