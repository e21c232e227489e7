// SPDX-License-Identifier: BSD-2-Clause
// The master's metadata state machine; state.hpp says how it is driven.
#include "state.hpp"

#include "checksum.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <chrono>
#include <tuple>

namespace dsmem::store {

namespace {

std::string hex_addr(uint64_t a)
{
	char b[24];
	snprintf(b, sizeof(b), "%#llx", static_cast<unsigned long long>(a));
	return b;
}

int fail(std::string *err, int ret, std::string msg)
{
	if (err)
		*err = std::move(msg);
	return ret;
}

std::string vname(const std::string &key, uint64_t version)
{
	return "'" + key.substr(0, 64) + (key.size() > 64 ? "...'" : "'") + " version " +
	       std::to_string(version);
}

uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

// Ten years: beyond it a TTL is a mistake (and ns would overflow later).
constexpr uint64_t kTtlMaxMs = 10ULL * 366 * 24 * 3600 * 1000;

bool expired(const VersionState &v, int64_t now_ns)
{
	return v.expires_ns && now_ns && now_ns >= v.expires_ns;
}

uint64_t replica_bytes(const pb::Replica &r)
{
	uint64_t n = 0;
	for (const auto &s : r.shards())
		n += s.length();
	return n;
}

}  // namespace

const char *segment_state_name(pb::SegmentState s)
{
	switch (s) {
	case pb::SEGMENT_ALIVE:
		return "alive";
	case pb::SEGMENT_DRAINING:
		return "draining";
	case pb::SEGMENT_DEAD:
		return "dead";
	default:
		return "?";
	}
}

// ---- validation

int MasterState::check_key(const std::string &key, std::string *err)
{
	if (key.empty())
		return fail(err, -EINVAL, "empty key");
	if (key.size() > kKeyMax)
		return fail(err, -EINVAL, "key of " + std::to_string(key.size()) +
						  " bytes; the limit is " + std::to_string(kKeyMax));
	if (key.find('\0') != std::string::npos)
		return fail(err, -EINVAL, "key with a NUL byte");
	return 0;
}

bool MasterState::touches(const pb::Replica &r, uint64_t segment_id)
{
	for (const auto &s : r.shards())
		if (s.segment_id() == segment_id)
			return true;
	return false;
}

// ---- lookups

const ObjectState *MasterState::find_object(const std::string &key) const
{
	auto it = objects_.find(key);
	return it == objects_.end() ? nullptr : &it->second;
}

const VersionState *MasterState::find_version(const std::string &key, uint64_t version) const
{
	const ObjectState *o = find_object(key);
	if (!o)
		return nullptr;
	auto it = o->versions.find(version);
	return it == o->versions.end() ? nullptr : &it->second;
}

const VersionState *MasterState::pending_put(const std::string &key, uint64_t client_id,
					     uint64_t request_id) const
{
	const ObjectState *o = request_id ? find_object(key) : nullptr;
	if (!o)
		return nullptr;
	for (const auto &[ver, v] : o->versions)
		if (!v.complete && !v.deleted && v.client_id == client_id && v.request_id == request_id)
			return &v;
	return nullptr;
}

VersionState *MasterState::version_mut(const std::string &key, uint64_t version)
{
	return const_cast<VersionState *>(find_version(key, version));
}

const VersionState *MasterState::newest(const std::string &key) const
{
	const ObjectState *o = find_object(key);
	return o ? newest_of(*o) : nullptr;
}

const VersionState *MasterState::newest_of(const ObjectState &o)
{
	for (auto it = o.versions.rbegin(); it != o.versions.rend(); ++it)
		if (it->second.complete && !it->second.deleted)
			return &it->second;
	return nullptr;
}

const SegmentState *MasterState::segment(uint64_t id) const
{
	auto it = segments_.find(id);
	return it == segments_.end() ? nullptr : &it->second;
}

void MasterState::segment_desc(const SegmentState &s, pb::SegmentDesc *out) const
{
	*out = s.desc;
	out->set_used(s.alloc ? s.alloc->used() : 0);
}

void MasterState::object_info(const std::string &key, const VersionState &v, bool with_replicas,
			      pb::ObjectInfo *out) const
{
	const ObjectState *o = find_object(key);

	out->Clear();
	out->set_key(key);
	out->set_version(v.version);
	out->set_size(v.size);
	*out->mutable_config() = v.config;
	if (with_replicas)
		for (const auto &r : v.replicas)
			if (!r.lost)
				*out->add_replicas() = r.r;
	uint64_t fv = o ? o->flushed_version : 0;
	out->set_flushed(fv == v.version);
	out->set_flushed_version(fv);
	out->set_ctime_ns(v.ctime_ns);
	*out->mutable_sums() = v.sums;
	out->set_owner(v.owner);
	out->set_expires_ns(v.expires_ns);
	out->set_atime_ns(o ? o->atime_ns : 0);
}

std::vector<MasterState::ReplicaRef> MasterState::replicas_on(uint64_t segment_id) const
{
	std::vector<ReplicaRef> out;

	for (const auto &[key, o] : objects_)
		for (const auto &[ver, v] : o.versions)
			for (size_t i = 0; i < v.replicas.size(); i++)
				if (!v.replicas[i].lost && touches(v.replicas[i].r, segment_id))
					out.push_back({ key, ver, static_cast<uint32_t>(i), v.complete });
	return out;
}

// ---- allocation

int MasterState::reserve_replica(const pb::Replica &r, std::string *err)
{
	for (int i = 0; i < r.shards_size(); i++) {
		const pb::Shard &s = r.shards(i);
		auto it = segments_.find(s.segment_id());
		bool ok = it != segments_.end() && it->second.alloc->reserve(s.offset(), s.length());
		if (!ok && it != segments_.end() && yield_salvage(s))
			ok = it->second.alloc->reserve(s.offset(), s.length());
		if (!ok) {
			for (int j = 0; j < i; j++) {
				const pb::Shard &t = r.shards(j);
				segments_.at(t.segment_id()).alloc->release(t.offset(), t.length());
			}
			return fail(err, -EINVAL,
				    "shard [" + std::to_string(s.offset()) + ", +" +
					    std::to_string(s.length()) + ") of segment " +
					    std::to_string(s.segment_id()) +
					    (it == segments_.end() ? " which is unknown" : " is taken"));
		}
	}
	return 0;
}

/*
 * A leader that logged no salvage (before SalvageDrop existed) freed a dead
 * segment's salvage without a record once it was not needed, and a later
 * record of its log may place a new replica there; a log replayed from
 * before that leader's records makes the salvage again, and it gives way
 * here, as it did on that leader.  A leader that logs salvage never places
 * over it (its places are allocated), so on its log this finds nothing.
 */
bool MasterState::yield_salvage(const pb::Shard &s)
{
	const uint64_t end = s.offset() + OffsetAllocator::round(s.length());
	bool yielded = false;

	for (auto it = salvaged_.begin(); it != salvaged_.end();) {
		VersionState &v = *version_mut(it->first, it->second);
		for (size_t i = 0; i < v.salvage.size();) {
			bool hit = false;
			for (const auto &t : v.salvage[i].shards())
				hit = hit || (t.segment_id() == s.segment_id() && t.offset() < end &&
					      s.offset() < t.offset() + OffsetAllocator::round(t.length()));
			if (!hit) {
				i++;
				continue;
			}
			free_replica(v.salvage[i]);
			v.salvage.erase(v.salvage.begin() + static_cast<long>(i));
			yielded = true;
		}
		it = v.salvage.empty() ? salvaged_.erase(it) : std::next(it);
	}
	return yielded;
}

void MasterState::free_salvage(const std::string &key, uint64_t version, VersionState &v)
{
	for (const auto &r : v.salvage)
		free_replica(r);
	v.salvage.clear();
	salvaged_.erase({ key, version });
}

void MasterState::free_replica(const pb::Replica &r)
{
	for (const auto &s : r.shards()) {
		auto it = segments_.find(s.segment_id());
		if (it != segments_.end())
			it->second.alloc->release(s.offset(), s.length());
	}
}

void MasterState::release_replica(const pb::Replica &r)
{
	free_replica(r);
}

std::vector<uint64_t> MasterState::candidates(pb::SegmentType type) const
{
	std::vector<uint64_t> out;

	for (const auto &[id, s] : segments_)
		if (s.desc.type() == type && s.desc.state() == pb::SEGMENT_ALIVE)
			out.push_back(id);
	return out;
}

int MasterState::place_shards(pb::SegmentType type, uint64_t size, uint64_t shard_size,
			      const std::vector<std::set<uint64_t>> &used_per_shard,
			      const std::vector<uint64_t> &preferred, const std::set<uint64_t> &exclude,
			      pb::Replica *out)
{
	std::vector<uint64_t> all = candidates(type);
	uint64_t nshards = div_up(size, shard_size);
	// segments the other replicas use at any index go last: one segment
	// lost then costs one replica, not a shard of each
	std::set<uint64_t> used_any;
	for (const auto &u : used_per_shard)
		used_any.insert(u.begin(), u.end());

	out->Clear();
	out->set_type(type);
	for (uint64_t j = 0; j < nshards; j++) {
		uint64_t len = std::min(shard_size, size - j * shard_size);
		std::vector<uint64_t> order;

		// random order (Fisher-Yates), the preferred segments first
		std::vector<uint64_t> rest = all;
		for (size_t i = rest.size(); i > 1; i--) {
			rng_ ^= rng_ << 13;
			rng_ ^= rng_ >> 7;
			rng_ ^= rng_ << 17;
			std::swap(rest[i - 1], rest[rng_ % i]);
		}
		for (uint64_t p : preferred)
			order.push_back(p);
		for (int pass = 0; pass < 2; pass++)
			for (uint64_t c : rest)
				if (std::find(preferred.begin(), preferred.end(), c) == preferred.end() &&
				    (used_any.count(c) != 0) == (pass == 1))
					order.push_back(c);

		bool placed = false;
		for (uint64_t id : order) {
			if (exclude.count(id) || (j < used_per_shard.size() && used_per_shard[j].count(id)))
				continue;
			auto it = segments_.find(id);
			if (it == segments_.end() || it->second.desc.type() != type ||
			    it->second.desc.state() != pb::SEGMENT_ALIVE)
				continue;
			std::optional<uint64_t> off = it->second.alloc->allocate(len);
			if (!off)
				continue;
			pb::Shard *s = out->add_shards();
			s->set_segment_id(id);
			s->set_offset(*off);
			s->set_length(len);
			placed = true;
			break;
		}
		if (!placed) {
			free_replica(*out);
			out->clear_shards();
			return -ENOSPC;
		}
	}
	return 0;
}

// ---- planners

int MasterState::plan_term(lg::Record *rec) const
{
	rec->mutable_term()->set_term(term_ + 1);
	return 0;
}

int MasterState::check_client(const Caller &c, uint64_t client_id, std::string *err) const
{
	auto it = clients_.find(client_id);
	if (c.admin || it == clients_.end() || it->second.identity() == c.identity)
		return 0;
	return fail(err, -EPERM, "client " + std::to_string(client_id) + " is " +
					 it->second.identity() + "'s, not " + c.identity + "'s");
}

int MasterState::check_owner(const Caller &c, const std::string &key, std::string *err) const
{
	const ObjectState *o = find_object(key);
	if (c.admin || !o)
		return 0;
	for (const auto &[ver, v] : o->versions)
		if (!v.deleted && v.owner != c.identity)
			return fail(err, -EPERM, "'" + key.substr(0, 64) + "' belongs to " + v.owner +
							 ", not " + c.identity);
	return 0;
}

int MasterState::plan_register_client(const Caller &c, const pb::Member &self, uint64_t previous_id,
				      lg::Record *rec, std::string *err) const
{
	if (previous_id)
		if (int ret = check_client(c, previous_id, err))
			return ret;
	if (self.node_id() == 0)
		return fail(err, -EINVAL, "a client without a dsmem node (node_id 0)");
	if (self.addr().empty())
		return fail(err, -EINVAL, "a client without an address");
	if (self.port() == 0 || self.port() > 65535)
		return fail(err, -EINVAL, "a client without an rdma_cm port");
	lg::ClientAdd *a = rec->mutable_client_add();
	uint64_t id = previous_id && clients_.count(previous_id) ? previous_id : next_client_id_;
	a->set_client_id(id);
	*a->mutable_member() = self;
	a->mutable_member()->set_client_id(id);
	a->mutable_member()->set_master(false);
	a->mutable_member()->set_identity(c.identity);
	return 0;
}

int MasterState::plan_register_segment(const Caller &c, uint64_t client_id, const pb::SegmentDesc &desc,
				       lg::Record *rec, uint64_t *id, bool *remounted,
				       std::string *err) const
{
	// client 0: a segment nobody owns (an NVMe-oF namespace an operator
	// adds); it is never declared dead
	if (client_id && !clients_.count(client_id))
		return fail(err, -ENOENT, "unknown client " + std::to_string(client_id) +
						  "; register again");
	if (desc.size() < kAllocUnit)
		return fail(err, -EINVAL, "a segment of " + std::to_string(desc.size()) +
						  " bytes; the least is " + std::to_string(kAllocUnit));
	if (desc.type() == pb::SEGMENT_DRAM) {
		if (!desc.node_id() || !desc.gaddr())
			return fail(err, -EINVAL, "a DRAM segment needs its node and global address");
		// Its memory is where its address says (the top 16 bits name
		// the node, as DSMEM_GADDR_NODE), and a client offers its own
		// node's: other members will write there.
		if (desc.gaddr() >> 48 != desc.node_id())
			return fail(err, -EINVAL, "a DRAM segment's global address " +
							  hex_addr(desc.gaddr()) + " is not on its node " +
							  std::to_string(desc.node_id()));
		if (client_id && !c.admin && clients_.at(client_id).node_id() != desc.node_id())
			return fail(err, -EPERM, "client " + std::to_string(client_id) + " is on node " +
							 std::to_string(clients_.at(client_id).node_id()) +
							 ", not node " + std::to_string(desc.node_id()));
	} else if (desc.type() == pb::SEGMENT_NVMEOF) {
		if (desc.traddr().empty() || desc.subnqn().empty() || !desc.trsvcid())
			return fail(err, -EINVAL, "an NVMe-oF segment needs traddr, trsvcid and subnqn");
	} else {
		return fail(err, -EINVAL, "unknown segment type");
	}

	// The same segment again (a remount), or none that shares a byte
	// with it: a segment over another's memory would let its maker be
	// handed space the other holds objects in.  A DRAM segment is known
	// by its global address, an NVMe-oF one by its namespace and base.
	const bool dram = desc.type() == pb::SEGMENT_DRAM;
	const uint64_t start = dram ? desc.gaddr() : desc.base();
	if (start + desc.size() < start)
		return fail(err, -EINVAL, "a segment that wraps past the end of the address space");
	const SegmentState *known = nullptr;
	for (const auto &[sid, s] : segments_) {
		const pb::SegmentDesc &d = s.desc;
		if (d.type() != desc.type())
			continue;
		if (!dram && (d.traddr() != desc.traddr() || d.trsvcid() != desc.trsvcid() ||
			      d.subnqn() != desc.subnqn()))
			continue;
		const uint64_t at = dram ? d.gaddr() : d.base();
		if (at == start) {
			known = &s;
			continue;
		}
		if (start < at + d.size() && at < start + desc.size())
			return fail(err, -EEXIST,
				    "the segment overlaps segment " + std::to_string(d.id()) + " (" +
				    std::to_string(d.size()) + " bytes at " + hex_addr(at) + ")");
	}
	if (known && !c.admin && known->desc.owner_identity() != c.identity)
		return fail(err, -EPERM, "segment " + std::to_string(known->desc.id()) + " is " +
						 known->desc.owner_identity() + "'s, not " + c.identity + "'s");
	pb::SegmentDesc *nd = rec->mutable_segment_add()->mutable_desc();
	*nd = desc;
	nd->set_owner(client_id);
	// an admin remounting keeps the owner; anyone else is the owner
	nd->set_owner_identity(known && c.admin ? known->desc.owner_identity() : c.identity);
	nd->set_state(pb::SEGMENT_ALIVE);
	nd->set_used(0);
	nd->set_reclaimed(false);	// the master's alone to set
	if (known) {
		// the same memory again: its shards are where the metadata says
		if (OffsetAllocator::round(desc.size()) < known->alloc->size() &&
		    known->alloc->used())
			return fail(err, -EINVAL, "segment " + std::to_string(known->desc.id()) +
							  " remounted smaller than it was");
		*id = known->desc.id();
		*remounted = true;
		nd->set_id(*id);
		nd->set_size(known->desc.size());
		if (known->desc.owner() == client_id && known->desc.state() == pb::SEGMENT_ALIVE)
			rec->Clear();
		return 0;
	}
	*id = next_segment_id_;
	*remounted = false;
	nd->set_id(*id);
	return 0;
}

int MasterState::plan_put_start(const Caller &c, uint64_t client_id, const std::string &key, uint64_t size,
				const pb::ReplicateConfig &config,
				const std::set<uint64_t> &exclude, int64_t now_ns,
				lg::Record *rec, std::string *err)
{
	if (int ret = check_key(key, err))
		return ret;
	if (size == 0)
		return fail(err, -EINVAL, "an object of 0 bytes");
	if (size > limits_.max_object_size)
		return fail(err, -EINVAL, "an object of " + std::to_string(size) +
						  " bytes; the limit is " +
						  std::to_string(limits_.max_object_size));
	if (config.dram_replicas() + config.nvmeof_replicas() == 0)
		return fail(err, -EINVAL, "no replica asked for (dram 0, nvmeof 0)");
	if (config.dram_replicas() > 64 || config.nvmeof_replicas() > 64)
		return fail(err, -EINVAL, "more than 64 replicas of one kind");
	if (config.ttl_ms() > kTtlMaxMs)
		return fail(err, -EINVAL, "a TTL of " + std::to_string(config.ttl_ms()) +
						  " ms; the limit is ten years");
	if (int ret = check_owner(c, key, err))
		return ret;
	if (!c.admin) {
		auto [n, bytes] = pending_of(c.identity);
		if ((limits_.identity_pending_puts && n >= limits_.identity_pending_puts) ||
		    (limits_.identity_pending_bytes &&
		     bytes + size > limits_.identity_pending_bytes))
			return fail(err, -EDQUOT,
				    c.identity + " has " + std::to_string(n) + " puts of " +
				    std::to_string(bytes) + " bytes pending; its quota is " +
				    std::to_string(limits_.identity_pending_puts) + " puts of " +
				    std::to_string(limits_.identity_pending_bytes) + " bytes");
	}

	std::vector<uint64_t> local;
	if (config.prefer_local() && client_id)
		for (const auto &[id, s] : segments_)
			if (s.desc.owner() == client_id && s.desc.type() == pb::SEGMENT_DRAM)
				local.push_back(id);

	lg::PutStart *p = rec->mutable_put_start();
	uint64_t nshards = div_up(size, limits_.shard_size);
	std::vector<std::set<uint64_t>> used(nshards);
	for (uint32_t i = 0; i < config.dram_replicas(); i++) {
		pb::Replica r;
		if (place_shards(pb::SEGMENT_DRAM, size, limits_.shard_size, used,
				 i == 0 ? local : std::vector<uint64_t>{}, exclude, &r))
			break;
		for (int j = 0; j < r.shards_size(); j++)
			used[j].insert(r.shards(j).segment_id());
		*p->add_replicas() = std::move(r);
	}
	std::vector<std::set<uint64_t>> nused(1);
	uint64_t nsize = OffsetAllocator::round(size);
	for (uint32_t i = 0; i < config.nvmeof_replicas(); i++) {
		pb::Replica r;
		if (place_shards(pb::SEGMENT_NVMEOF, size, nsize, nused, {}, exclude, &r))
			break;
		nused[0].insert(r.shards(0).segment_id());
		*p->add_replicas() = std::move(r);
	}
	// apply() reserves what placement found
	for (const auto &r : p->replicas())
		free_replica(r);
	if (p->replicas_size() == 0) {
		rec->Clear();
		return fail(err, -ENOSPC, "no segment has room for " + std::to_string(size) +
						  " bytes (" + std::to_string(candidates(pb::SEGMENT_DRAM).size()) +
						  " DRAM, " +
						  std::to_string(candidates(pb::SEGMENT_NVMEOF).size()) +
						  " NVMe-oF segments alive)");
	}
	p->set_key(key);
	p->set_owner(c.identity);
	p->set_version(next_version_);
	p->set_size(size);
	*p->mutable_config() = config;
	p->set_deadline_ns(now_ns + limits_.put_timeout_ns);
	p->set_client_id(client_id);
	return 0;
}

int MasterState::plan_put_commit(const std::string &key, uint64_t version,
				 const std::vector<uint32_t> &done, const pb::Checksums &sums,
				 int64_t now_ns, lg::Record *rec, lg::Record *abort,
				 std::string *err) const
{
	if (int ret = check_key(key, err))
		return ret;
	const VersionState *v = find_version(key, version);
	if (!v) {
		if (version && version < next_version_)
			return fail(err, -ESTALE, "put of " + vname(key, version) +
							  " expired or was aborted");
		return fail(err, -ENOENT, "no put of " + vname(key, version));
	}
	if (v->complete)
		return 0;	// a retried commit: *rec stays empty
	if (now_ns > v->deadline_ns) {
		abort->mutable_put_abort()->set_key(key);
		abort->mutable_put_abort()->set_version(version);
		abort->mutable_put_abort()->set_expired(true);
		return fail(err, -ESTALE, "put of " + vname(key, version) + " expired");
	}
	if (int ret = valid_sums(sums, v->size, err))
		return ret;
	lg::PutCommit *c = rec->mutable_put_commit();
	*c->mutable_sums() = sums;
	std::set<uint32_t> seen;
	for (uint32_t i : done) {
		if (i >= v->replicas.size())
			return fail(err, -EINVAL, "replica index " + std::to_string(i) + " of " +
							  std::to_string(v->replicas.size()));
		if (v->replicas[i].lost || !seen.insert(i).second)
			continue;
		c->add_done(i);
	}
	if (c->done_size() == 0) {
		rec->Clear();
		abort->mutable_put_abort()->set_key(key);
		abort->mutable_put_abort()->set_version(version);
		return fail(err, -ESTALE, done.empty() ? "no replica of " + vname(key, version) + " was written"
						       : "every written replica of " + vname(key, version) +
								 " lost its segment");
	}
	c->set_key(key);
	c->set_version(version);
	c->set_ctime_ns(now_ns);
	return 0;
}

int MasterState::plan_put_abort(const std::string &key, uint64_t version, lg::Record *rec,
				std::string *err) const
{
	if (int ret = check_key(key, err))
		return ret;
	const VersionState *v = find_version(key, version);
	if (!v)
		return fail(err, -ENOENT, "no put of " + vname(key, version));
	if (v->complete)
		return fail(err, -EINVAL, vname(key, version) + " is already complete");
	rec->mutable_put_abort()->set_key(key);
	rec->mutable_put_abort()->set_version(version);
	return 0;
}

int MasterState::plan_del(const Caller &c, const std::string &key, lg::Record *rec,
			  uint64_t *versions, std::string *err) const
{
	if (int ret = check_key(key, err))
		return ret;
	const ObjectState *o = find_object(key);
	if (!o || !newest(key))
		return fail(err, -ENOENT, "no object '" + key.substr(0, 64) + "'");
	if (int ret = check_owner(c, key, err))
		return ret;
	*versions = 0;
	for (const auto &[ver, v] : o->versions)
		if (!v.deleted && v.complete)
			(*versions)++;
	// every put begun before: a pending one must not resurrect the key
	rec->mutable_del()->set_key(key);
	rec->mutable_del()->set_up_to(next_version_ - 1);
	rec->mutable_del()->set_versions(*versions);
	return 0;
}

const lg::Del *MasterState::recent_del(const std::string &key, uint64_t request_id) const
{
	if (!request_id)
		return nullptr;
	auto [b, e] = recent_by_id_.equal_range(request_id);
	for (auto it = b; it != e; ++it)
		if (it->second->del.key() == key)
			return &it->second->del;
	return nullptr;
}

namespace {

int64_t steady_ms()
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

}  // namespace

// Kept even past limits_.recent_dels (a replay of a log written with a
// larger limit): a forgotten delete is worse than memory.
void MasterState::remember_del(const lg::Del &d)
{
	if (!d.request_id())
		return;
	recent_dels_.push_back({ steady_ms(), d });
	recent_by_id_.emplace(d.request_id(), &recent_dels_.back());
}

void MasterState::prune_recent_dels(int64_t now_ms)
{
	while (!recent_dels_.empty() &&
	       now_ms - recent_dels_.front().at_ms > limits_.retry_window_ms) {
		const RecentDel *r = &recent_dels_.front();
		auto [b, e] = recent_by_id_.equal_range(r->del.request_id());
		for (auto it = b; it != e; ++it)
			if (it->second == r) {
				recent_by_id_.erase(it);
				break;
			}
		recent_dels_.pop_front();
	}
}

namespace {

// Drops, each named by its places, taking v's replicas down to config:
// the newest first (the oldest have been read the most), and never the
// last one.
void plan_excess_drops(const std::string &key, const VersionState &v,
		       const pb::ReplicateConfig &config, std::vector<lg::Record> *recs)
{
	uint32_t have[2] = { 0, 0 }, want[2] = { config.dram_replicas(), config.nvmeof_replicas() };
	std::vector<uint32_t> drop;
	for (const auto &r : v.replicas) {
		int t = r.r.type() == pb::SEGMENT_NVMEOF;
		have[t]++;
	}
	for (size_t i = v.replicas.size(); i-- > 0;) {
		int t = v.replicas[i].r.type() == pb::SEGMENT_NVMEOF;
		if (have[t] > want[t]) {
			have[t]--;
			drop.push_back(static_cast<uint32_t>(i));
		}
	}
	if (drop.size() == v.replicas.size() && !drop.empty())
		drop.pop_back();
	// (the index is for logs read by an older master; the places decide)
	for (uint32_t i : drop) {
		lg::Record r;
		r.mutable_replica_drop()->set_key(key);
		r.mutable_replica_drop()->set_version(v.version);
		r.mutable_replica_drop()->set_index(i);
		*r.mutable_replica_drop()->mutable_replica() = v.replicas[i].r;
		recs->push_back(r);
	}
}

}  // namespace

int MasterState::plan_replicate(const std::string &key, const pb::ReplicateConfig &config,
				int64_t now_ns, std::vector<lg::Record> *recs, uint64_t *version,
				bool *deferred, std::string *err) const
{
	*deferred = false;
	if (int ret = check_key(key, err))
		return ret;
	if (config.dram_replicas() + config.nvmeof_replicas() == 0)
		return fail(err, -EINVAL, "no replica asked for (dram 0, nvmeof 0); use del");
	if (config.dram_replicas() > 64 || config.nvmeof_replicas() > 64)
		return fail(err, -EINVAL, "more than 64 replicas of one kind");
	const VersionState *v = newest(key);
	if (!v)
		return fail(err, -ENOENT, "no object '" + key.substr(0, 64) + "'");
	*version = v->version;
	lg::Record cs;
	cs.mutable_config_set()->set_key(key);
	cs.mutable_config_set()->set_version(v->version);
	*cs.mutable_config_set()->mutable_config() = config;
	// the replicas change, not the object's pin or TTL (SetAttr's)
	cs.mutable_config_set()->mutable_config()->set_soft_pin(v->config.soft_pin());
	cs.mutable_config_set()->mutable_config()->set_ttl_ms(v->config.ttl_ms());
	recs->push_back(cs);

	std::vector<lg::Record> drops;
	plan_excess_drops(key, *v, config, &drops);
	if (drops.empty())
		return 0;
	if (readers_may_hold(key, v->version, now_ns)) {
		*deferred = true;
		return 0;
	}
	recs->insert(recs->end(), drops.begin(), drops.end());
	return 0;
}

std::vector<lg::Record> MasterState::plan_trim(const std::string &key, int64_t now_ns) const
{
	std::vector<lg::Record> recs;
	const VersionState *v = newest(key);
	if (v && !readers_may_hold(key, v->version, now_ns))
		plan_excess_drops(key, *v, v->config, &recs);
	return recs;
}

int MasterState::place_replica(const std::string &key, uint64_t version, pb::SegmentType type,
			       const std::set<uint64_t> &avoid, int skip, pb::Replica *out,
			       std::string *err)
{
	const VersionState *v = find_version(key, version);
	if (!v)
		return fail(err, -ENOENT, "no " + vname(key, version));
	uint64_t shard = type == pb::SEGMENT_DRAM ? limits_.shard_size : OffsetAllocator::round(v->size);
	std::vector<std::set<uint64_t>> used(div_up(v->size, shard));
	for (size_t i = 0; i < v->replicas.size(); i++) {
		const ReplicaState &r = v->replicas[i];
		if (r.lost || r.r.type() != type || static_cast<int>(i) == skip)
			continue;
		for (int j = 0; j < r.r.shards_size() && j < static_cast<int>(used.size()); j++)
			used[j].insert(r.r.shards(j).segment_id());
	}
	if (place_shards(type, v->size, shard, used, {}, avoid, out))
		return fail(err, -ENOSPC, "no room for another replica of " + vname(key, version));
	return 0;
}

void MasterState::plan_reserve(const std::string &key, uint64_t version, const pb::Replica &r,
			       lg::Record *rec) const
{
	lg::ReplicaReserve *res = rec->mutable_replica_reserve();
	res->set_id(next_reservation_id_);
	res->set_key(key);
	res->set_version(version);
	*res->mutable_replica() = r;
	res->set_term(term_);
}

// ---- queries

int MasterState::get(const std::string &key, int64_t min_version, GetResult *res,
		     std::string *err, int64_t now_ns) const
{
	if (int ret = check_key(key, err))
		return ret;
	const VersionState *v = newest(key);
	if (!v)
		return fail(err, -ENOENT, find_object(key) ? "no complete version of '" + key.substr(0, 64) + "'"
							   : "no object '" + key.substr(0, 64) + "'");
	if (expired(*v, now_ns))
		return fail(err, -ENOENT, "'" + key.substr(0, 64) + "' expired (its TTL ran out)");
	if (min_version >= 0 && static_cast<uint64_t>(min_version) >= next_version_)
		return fail(err, -ERANGE, "min_version " + std::to_string(min_version) +
						  " is in the future (the newest version given out is " +
						  std::to_string(next_version_ - 1) + ")");
	*res = GetResult{};
	if (min_version >= 0 && v->version < static_cast<uint64_t>(min_version)) {
		object_info(key, *v, false, &res->object);
		res->below_min_version = true;
		return 0;
	}
	object_info(key, *v, true, &res->object);
	if (res->object.replicas_size() == 0) {
		if (!res->object.flushed())
			return fail(err, -ENODATA, "no readable replica: every replica of " +
							   vname(key, v->version) +
							   " is gone and it is not in the slow tier");
		res->slow_tier = true;
	}
	return 0;
}

int MasterState::list(const std::string &prefix, const std::string &start_after, uint32_t limit,
		      std::vector<pb::ObjectInfo> *out, bool *more, int64_t now_ns) const
{
	if (!limit || limit > limits_.list_page)
		limit = limits_.list_page;
	*more = false;
	auto it = start_after.empty() || start_after < prefix ? objects_.lower_bound(prefix)
							       : objects_.upper_bound(start_after);
	for (; it != objects_.end(); ++it) {
		if (it->first.compare(0, prefix.size(), prefix) != 0)
			break;
		const VersionState *v = newest(it->first);
		if (!v || expired(*v, now_ns))
			continue;
		if (out->size() == limit) {
			*more = true;
			break;
		}
		out->emplace_back();
		object_info(it->first, *v, true, &out->back());
	}
	return 0;
}

bool MasterState::pending_upto(const std::string &key, uint64_t up_to) const
{
	const ObjectState *o = find_object(key);
	if (!o)
		return false;
	for (const auto &[ver, v] : o->versions) {
		if (ver > up_to)
			break;
		if (!v.complete)
			return true;
	}
	return false;
}

std::vector<lg::Record> MasterState::plan_expiry(int64_t now_ns) const
{
	std::vector<lg::Record> out;

	if (now_ns < expiry_not_before_ns_)
		return out;
	for (const std::string &key : attention_)
		for (const auto &[ver, v] : find_object(key)->versions)
			if (!v.complete && now_ns > v.deadline_ns + limits_.write_grace_ns) {
				lg::Record r;
				r.mutable_put_abort()->set_key(key);
				r.mutable_put_abort()->set_version(ver);
				r.mutable_put_abort()->set_expired(true);
				out.push_back(std::move(r));
			}
	return out;
}

std::vector<lg::Record> MasterState::plan_gc(int64_t now_ns) const
{
	std::vector<lg::Record> out;

	if (now_ns < gc_not_before_ns_)
		return out;
	for (const std::string &key : attention_) {
		const VersionState *n = newest(key);
		for (const auto &[ver, v] : find_object(key)->versions) {
			if (!v.complete)
				continue;
			if (!v.deleted && (!n || ver >= n->version))
				continue;
			if (leased(key, ver, now_ns))
				continue;
			lg::Record r;
			r.mutable_version_drop()->set_key(key);
			r.mutable_version_drop()->set_version(ver);
			out.push_back(std::move(r));
		}
	}
	return out;
}

// ---- eviction and TTL

void MasterState::tier_usage(pb::SegmentType type, uint64_t *size, uint64_t *used) const
{
	*size = *used = 0;
	for (const auto &[id, s] : segments_)
		if (s.desc.type() == type && s.desc.state() == pb::SEGMENT_ALIVE) {
			*size += s.alloc->size();
			*used += s.alloc->used();
		}
}

void MasterState::touch(const std::string &key, int64_t now_ns)
{
	auto it = objects_.find(key);
	if (it == objects_.end() || it->second.atime_ns >= now_ns)
		return;
	// (one lookup: a get calls this, and the map holds millions)
	// (and no allocation: the entry's node moves to its new place)
	const VersionState *n = newest_of(it->second);
	if (!n || n->evicted) {
		it->second.atime_ns = now_ns;
		return;
	}
	auto node = lru_.extract({ n->config.soft_pin(), it->second.atime_ns, &it->first });
	it->second.atime_ns = now_ns;
	if (node) {
		node.value().atime_ns = now_ns;
		lru_.insert(std::move(node));
	}
}

std::optional<MasterState::LruEntry> MasterState::lru_entry(const std::string &key) const
{
	auto it = objects_.find(key);
	if (it == objects_.end())
		return std::nullopt;
	const VersionState *n = newest_of(it->second);
	if (!n || n->evicted)
		return std::nullopt;
	return LruEntry{ n->config.soft_pin(), it->second.atime_ns, &it->first };
}

void MasterState::lru_out(const std::string &key)
{
	if (std::optional<LruEntry> e = lru_entry(key))
		lru_.erase(*e);
}

void MasterState::lru_in(const std::string &key)
{
	if (std::optional<LruEntry> e = lru_entry(key))
		lru_.insert(*e);
}

std::vector<EvictCandidate> MasterState::eviction_order(pb::SegmentType type, int64_t now_ns,
							EvictBlockers *why, size_t max) const
{
	std::vector<EvictCandidate> out;
	EvictBlockers b;

	b.pending = pending_;
	for (const auto &[id, r] : reservations_)
		if (r.term() < term_ && r.replica().type() == type)
			b.quarantined_bytes += replica_bytes(r.replica());
	// a new leader does not know the old one's read leases: nothing goes
	// before they have run out (as for GC)
	if (now_ns < gc_not_before_ns_)
		b.takeover_left_ns = gc_not_before_ns_ - now_ns;
	for (auto e = lru_.begin(); !b.takeover_left_ns && e != lru_.end() && out.size() < max; ++e) {
		const std::string &key = *e->key;
		const VersionState *n = newest(key);
		EvictCandidate c;
		for (const auto &r : n->replicas) {
			if (r.lost)
				continue;
			uint64_t bytes = replica_bytes(r.r);
			c.bytes += bytes;
			if (r.r.type() == type)
				c.tier_bytes += bytes;
		}
		if (!c.tier_bytes)
			continue;
		if (leased(key, n->version, now_ns)) {
			b.leased++;
			continue;
		}
		c.key = key;
		c.version = n->version;
		c.soft_pin = e->soft_pin;
		c.atime_ns = e->atime_ns;
		out.push_back(std::move(c));
	}
	if (why)
		*why = b;
	return out;
}

void MasterState::plan_evict(const EvictCandidate &c, lg::Evict::Reason reason, lg::Record *rec) const
{
	lg::Evict *e = rec->mutable_evict();
	e->set_key(c.key);
	e->set_version(c.version);
	e->set_reason(reason);
	e->set_bytes(c.bytes);
}

std::vector<lg::Record> MasterState::plan_ttl(int64_t now_ns) const
{
	std::vector<lg::Record> out;

	if (now_ns < gc_not_before_ns_)
		return out;
	for (const std::string &key : attention_) {
		const VersionState *n = newest(key);
		if (!n || !expired(*n, now_ns) || leased(key, n->version, now_ns))
			continue;
		EvictCandidate c;
		c.key = key;
		c.version = n->version;
		for (const auto &r : n->replicas)
			if (!r.lost)
				c.bytes += replica_bytes(r.r);
		lg::Record rec;
		plan_evict(c, lg::Evict::TTL, &rec);
		out.push_back(std::move(rec));
	}
	return out;
}

int MasterState::plan_set_attr(const Caller &c, const std::string &key, uint32_t mask,
			       bool soft_pin, uint64_t ttl_ms, int64_t now_ns, lg::Record *rec,
			       std::string *err) const
{
	if (int ret = check_key(key, err))
		return ret;
	if (!mask || (mask & ~static_cast<uint32_t>(pb::SET_ATTR_SOFT_PIN | pb::SET_ATTR_TTL)))
		return fail(err, -EINVAL, "attribute mask " + std::to_string(mask) +
						  ": set soft_pin (1), ttl (2) or both");
	if (ttl_ms > kTtlMaxMs)
		return fail(err, -EINVAL, "a TTL of " + std::to_string(ttl_ms) +
						  " ms; the limit is ten years");
	const VersionState *v = newest(key);
	if (!v || expired(*v, now_ns))
		return fail(err, -ENOENT, "no object '" + key.substr(0, 64) + "'");
	if (int ret = check_owner(c, key, err))
		return ret;
	lg::ConfigSet *cs = rec->mutable_config_set();
	cs->set_key(key);
	cs->set_version(v->version);
	*cs->mutable_config() = v->config;
	if (mask & pb::SET_ATTR_SOFT_PIN)
		cs->mutable_config()->set_soft_pin(soft_pin);
	if (mask & pb::SET_ATTR_TTL) {
		cs->mutable_config()->set_ttl_ms(ttl_ms);
		cs->set_set_expiry(true);
		cs->set_expires_ns(ttl_ms ? now_ns + static_cast<int64_t>(ttl_ms) * 1000000 : 0);
	}
	return 0;
}

std::vector<RepairPlan> MasterState::plan_repairs() const
{
	std::vector<RepairPlan> out;

	for (const std::string &key : repair_due_)
		if (std::optional<RepairPlan> p = plan_repair(key))
			out.push_back(std::move(*p));
	return out;
}

std::optional<RepairPlan> MasterState::plan_repair(const std::string &key) const
{
	const VersionState *v = newest(key);
	if (!v || v->evicted)
		return std::nullopt;
	uint32_t good[2] = { 0, 0 };
	for (const auto &r : v->replicas) {
		bool ok = true;
		// a draining segment's replica is read from until its drain
		// moves it: a repair beside the drain would make a copy too many
		for (const auto &s : r.r.shards()) {
			const SegmentState *seg = segment(s.segment_id());
			if (!seg || (seg->desc.state() != pb::SEGMENT_ALIVE &&
				     seg->desc.state() != pb::SEGMENT_DRAINING))
				ok = false;
		}
		if (ok)
			good[r.r.type() == pb::SEGMENT_NVMEOF]++;
	}
	RepairPlan p;
	p.key = key;
	p.version = v->version;
	if (good[0] < v->config.dram_replicas())
		p.dram_missing = v->config.dram_replicas() - good[0];
	if (good[1] < v->config.nvmeof_replicas())
		p.nvmeof_missing = v->config.nvmeof_replicas() - good[1];
	if (p.dram_missing || p.nvmeof_missing)
		return p;
	return std::nullopt;
}

std::vector<std::pair<std::string, uint64_t>> MasterState::plan_flushes(uint64_t durable_records) const
{
	std::vector<std::pair<std::string, uint64_t>> out;

	for (const std::string &key : attention_) {
		const VersionState *v = newest(key);
		// not before its commit is durable: a copy of a version the
		// log forgets would be served as another put's under its number
		if (v && v->config.flush() != pb::FLUSH_NONE &&
		    find_object(key)->flushed_version < v->version &&
		    v->committed_at <= durable_records)
			out.emplace_back(key, v->version);
	}
	return out;
}

bool MasterState::same_replica(const pb::Replica &a, const pb::Replica &b)
{
	if (a.type() != b.type() || a.shards_size() != b.shards_size())
		return false;
	for (int i = 0; i < a.shards_size(); i++)
		if (a.shards(i).segment_id() != b.shards(i).segment_id() ||
		    a.shards(i).offset() != b.shards(i).offset() ||
		    a.shards(i).length() != b.shards(i).length())
			return false;
	return true;
}

int MasterState::plan_drop_bad_replica(const std::string &key, uint64_t version, const pb::Replica &bad,
				       const std::vector<pb::Replica> &verified, bool slow_copy_verified,
				       lg::Record *rec, std::string *err) const
{
	const VersionState *v = find_version(key, version);
	if (!v || !v->complete)
		return fail(err, -ENOENT, "no complete " + vname(key, version));
	int index = -1;
	bool good_left = slow_copy_verified;
	for (size_t i = 0; i < v->replicas.size(); i++) {
		const ReplicaState &r = v->replicas[i];
		if (r.lost)
			continue;
		if (same_replica(r.r, bad)) {
			index = static_cast<int>(i);
			continue;
		}
		for (const auto &g : verified)
			good_left = good_left || same_replica(r.r, g);
	}
	if (index < 0)
		return fail(err, -ENOENT, "the reported replica of " + vname(key, version) + " is gone");
	if (!good_left)
		return fail(err, -EBUSY, "no other copy of " + vname(key, version) +
						 " was read whole: the reported one stays");
	lg::ReplicaDrop *d = rec->mutable_replica_drop();
	d->set_key(key);
	d->set_version(version);
	d->set_index(static_cast<uint32_t>(index));
	*d->mutable_replica() = bad;
	return 0;
}

bool MasterState::live_version(const std::string &key, uint64_t version) const
{
	const VersionState *v = find_version(key, version);
	return v && v->complete && !v->deleted;
}

bool MasterState::slow_copy_listed(const std::string &key, uint64_t version, int64_t now_ns) const
{
	const ObjectState *o = find_object(key);
	if (!o || !version || o->flushed_version != version)
		return false;
	// (a version superseded and dropped since stays listed: it was
	// neither evicted nor deleted, and a reader told of it may read it)
	const VersionState *v = find_version(key, version);
	return !v || (!v->deleted && !expired(*v, now_ns));
}

bool MasterState::commit_durable(const std::string &key, uint64_t version, uint64_t durable_records) const
{
	const VersionState *v = find_version(key, version);
	return v && v->complete && v->committed_at <= durable_records;
}

void MasterState::lease(const std::string &key, uint64_t version, int64_t until_ns)
{
	auto [it, fresh] = leases_.try_emplace({ key, version }, until_ns);
	if (fresh)
		lease_ends_.emplace(until_ns, it->first);
	else
		it->second = std::max(it->second, until_ns);
}

bool MasterState::leased(const std::string &key, uint64_t version, int64_t now_ns) const
{
	if (pins_.count({ key, version }))
		return true;
	auto it = leases_.find({ key, version });
	return it != leases_.end() && it->second > now_ns;
}

int64_t MasterState::readers_until(const std::string &key, uint64_t version, int64_t now_ns) const
{
	int64_t until = gc_not_before_ns_;
	auto it = leases_.find({ key, version });
	if (it != leases_.end())
		until = std::max(until, it->second);
	if (pins_.count({ key, version }))
		until = std::max(until, now_ns + limits_.get_lease_ns);
	return until;
}

void MasterState::unpin(const std::string &key, uint64_t version)
{
	auto it = pins_.find({ key, version });
	if (it != pins_.end() && --it->second <= 0)
		pins_.erase(it);
}

void MasterState::expire_leases(int64_t now_ns)
{
	// one entry in lease_ends_ per lease, at or before its end: an
	// extended lease's entry moves on to its new end when it comes up
	while (!lease_ends_.empty() && lease_ends_.begin()->first <= now_ns) {
		auto e = lease_ends_.begin();
		auto it = leases_.find(e->second);
		if (it != leases_.end() && it->second > now_ns) {
			auto node = lease_ends_.extract(e);
			node.key() = it->second;
			lease_ends_.insert(std::move(node));
			continue;
		}
		if (it != leases_.end())
			leases_.erase(it);
		lease_ends_.erase(e);
	}
}

std::vector<Salvage> MasterState::salvage() const
{
	std::vector<Salvage> out;

	for (const auto &[key, ver] : salvaged_)
		for (const auto &r : find_version(key, ver)->salvage)
			out.push_back({ key, ver, r });
	return out;
}

bool MasterState::salvage_on(uint64_t segment_id) const
{
	for (const auto &[key, ver] : salvaged_)
		for (const auto &r : find_version(key, ver)->salvage)
			if (touches(r, segment_id))
				return true;
	return false;
}

void MasterState::plan_salvage_drop(const std::string &key, uint64_t version, lg::Record *rec) const
{
	rec->mutable_salvage_drop()->set_key(key);
	rec->mutable_salvage_drop()->set_version(version);
}

// ---- apply

void MasterState::drop_segment_replicas(uint64_t id, bool dead)
{
	for (auto &[key, o] : objects_) {
		bool touched = false;
		for (auto &[ver, v] : o.versions) {
			// a segment removed takes its salvage along: it is never
			// read again, nor remounted under this id
			for (size_t i = 0; !dead && i < v.salvage.size();) {
				if (!touches(v.salvage[i], id)) {
					i++;
					continue;
				}
				free_replica(v.salvage[i]);
				v.salvage.erase(v.salvage.begin() + static_cast<long>(i));
				if (v.salvage.empty())
					salvaged_.erase({ key, ver });
			}
			for (size_t i = 0; i < v.replicas.size();) {
				ReplicaState &r = v.replicas[i];
				if (r.lost || !touches(r.r, id)) {
					i++;
					continue;
				}
				if (!v.complete) {
					// indexes of a pending put are the client's: keep its
					// place.  A dead segment may come back with its bytes
					// while the writer still writes: nothing else may be
					// placed there before the put ends.
					if (dead)
						r.held = true;
					else
						free_replica(r.r);
					r.lost = true;
					i++;
					continue;
				}
				// salvage keeps its places allocated: if the segment comes
				// back, nothing new lands on bytes still to be copied.  A
				// replay makes the same salvage: the records that ended
				// the leader's are in the log too.
				if (dead) {
					v.salvage.push_back(std::move(r.r));
					salvaged_.insert({ key, ver });
				} else {
					free_replica(r.r);
				}
				v.replicas.erase(v.replicas.begin() + static_cast<long>(i));
				touched = true;
			}
		}
		// its counts are as they were; what it needs of repair is not
		if (touched) {
			Tally t = tally(key);
			account(key, t, t);
		}
	}
}

void MasterState::erase_version(const std::string &key, uint64_t version)
{
	auto it = objects_.find(key);
	if (it == objects_.end())
		return;
	auto vit = it->second.versions.find(version);
	if (vit != it->second.versions.end()) {
		for (const auto &r : vit->second.replicas)
			if (!r.lost || r.held)
				free_replica(r.r);
		free_salvage(key, version, vit->second);
		it->second.versions.erase(vit);
	}
	leases_.erase({ key, version });
	if (it->second.versions.empty() && !it->second.flushed_version)
		objects_.erase(it);
}

int MasterState::apply_segment_add(const lg::SegmentAdd &r, std::string *err)
{
	const pb::SegmentDesc &d = r.desc();
	if (!d.id() || d.size() < kAllocUnit)
		return fail(err, -EINVAL, "segment add without an id or size");
	auto it = segments_.find(d.id());
	if (it != segments_.end()) {
		uint64_t size = it->second.desc.size();
		it->second.desc = d;
		it->second.desc.set_size(size);
		it->second.desc.set_used(0);
		return 0;
	}
	SegmentState s;
	s.desc = d;
	s.desc.set_used(0);
	s.alloc = std::make_unique<OffsetAllocator>(d.size());
	segments_.emplace(d.id(), std::move(s));
	next_segment_id_ = std::max(next_segment_id_, d.id() + 1);
	return 0;
}

int MasterState::apply_put_start(const lg::PutStart &r, std::string *err)
{
	if (int ret = check_key(r.key(), err))
		return ret;
	if (!r.version() || find_version(r.key(), r.version()))
		return fail(err, -EINVAL, "put start of " + vname(r.key(), r.version()) + " again");
	for (int i = 0; i < r.replicas_size(); i++) {
		if (int ret = reserve_replica(r.replicas(i), err)) {
			for (int j = 0; j < i; j++)
				free_replica(r.replicas(j));
			return ret;
		}
	}
	VersionState v;
	v.version = r.version();
	v.size = r.size();
	v.client_id = r.client_id();
	v.request_id = r.request_id();
	v.owner = r.owner();
	v.config = r.config();
	v.deadline_ns = r.deadline_ns();
	for (const auto &rep : r.replicas())
		v.replicas.push_back({ rep, false });
	objects_[r.key()].versions.emplace(v.version, std::move(v));
	next_version_ = std::max(next_version_, r.version() + 1);
	return 0;
}

int MasterState::apply_put_commit(const lg::PutCommit &r, std::string *err)
{
	VersionState *v = version_mut(r.key(), r.version());
	if (!v || v->complete)
		return fail(err, -EINVAL, "commit of " + vname(r.key(), r.version()) +
						  (v ? " again" : " which is not pending"));
	std::set<uint32_t> done(r.done().begin(), r.done().end());
	std::vector<ReplicaState> kept;
	for (size_t i = 0; i < v->replicas.size(); i++) {
		ReplicaState &rep = v->replicas[i];
		if (rep.lost) {
			if (rep.held)
				free_replica(rep.r);
			continue;
		}
		if (!done.count(static_cast<uint32_t>(i))) {
			free_replica(rep.r);
			continue;
		}
		kept.push_back(std::move(rep));
	}
	v->replicas = std::move(kept);
	v->complete = true;
	v->committed_at = applied_ + 1;	// this record's ordinal (apply counts it)
	v->deadline_ns = 0;
	v->ctime_ns = r.ctime_ns();
	v->sums = r.sums();
	if (v->config.ttl_ms())
		v->expires_ns = r.ctime_ns() + static_cast<int64_t>(v->config.ttl_ms()) * 1000000;
	ObjectState &o = objects_.at(r.key());
	o.atime_ns = std::max(o.atime_ns, r.ctime_ns());
	return 0;
}

int MasterState::apply_evict(const lg::Evict &r, std::string *err)
{
	VersionState *v = version_mut(r.key(), r.version());
	// (an expiry takes a version evicted to the slow tier, too)
	if (!v || !v->complete || v->deleted || (v->evicted && r.reason() == lg::Evict::LRU))
		return fail(err, -EINVAL, "eviction of " + vname(r.key(), r.version()) +
						  " which is not a live version");
	if (r.reason() == lg::Evict::TTL)
		expiries_++;
	else
		evictions_++;
	evicted_bytes_ += r.bytes();
	ObjectState &o = objects_.at(r.key());
	if (r.reason() == lg::Evict::LRU && o.flushed_version == r.version()) {
		// the slow tier has it: only the pool's copies go
		for (const auto &rep : v->replicas)
			if (!rep.lost)
				free_replica(rep.r);
		v->replicas.clear();
		free_salvage(r.key(), r.version(), *v);
		v->evicted = true;
		return 0;
	}
	for (auto &[ver, w] : o.versions)
		if (ver <= r.version())
			w.deleted = true;
	if (o.flushed_version <= r.version())
		o.flushed_version = 0;
	erase_version(r.key(), r.version());
	return 0;
}

int MasterState::apply_replica_add(const lg::ReplicaAdd &r, std::string *err)
{
	VersionState *v = version_mut(r.key(), r.version());
	if (!v || !v->complete)
		return fail(err, -EINVAL, "replica added to " + vname(r.key(), r.version()) +
						  " which is not complete");
	if (r.reservation()) {
		// written where it was reserved: the space is the replica's now
		auto it = reservations_.find(r.reservation());
		if (it == reservations_.end() ||
		    it->second.replica().SerializeAsString() != r.replica().SerializeAsString())
			return fail(err, -EINVAL, "replica of " + vname(r.key(), r.version()) +
							  " added where reservation " +
							  std::to_string(r.reservation()) + " is not");
		reservations_.erase(it);
	} else {
		// a salvaged replica re-adopted (its segment remounted) keeps
		// the places its salvage held
		std::string want = r.replica().SerializeAsString();
		auto sv = std::find_if(v->salvage.begin(), v->salvage.end(), [&](const pb::Replica &s) {
			return s.SerializeAsString() == want;
		});
		if (sv != v->salvage.end()) {
			v->salvage.erase(sv);
			if (v->salvage.empty())
				salvaged_.erase({ r.key(), r.version() });
		} else if (int ret = reserve_replica(r.replica(), err))
			return ret;
	}
	v->replicas.push_back({ r.replica(), false });
	return 0;
}

MasterState::Tally MasterState::tally(const std::string &key) const
{
	Tally t;
	const ObjectState *o = find_object(key);
	if (!o)
		return t;
	t.versions = o->versions.size();
	const VersionState *n = newest(key);
	if (n) {
		t.live = 1;
		t.bytes = n->size;
	}
	// a superset of what plan_expiry, plan_gc, plan_ttl and
	// plan_flushes look for
	t.attention = t.versions > 1 ||
		      (n && (n->expires_ns || (n->config.flush() != pb::FLUSH_NONE &&
					       o->flushed_version < n->version)));
	for (const auto &[ver, v] : o->versions) {
		t.attention = t.attention || !v.complete || v.deleted;
		if (!v.complete && !v.deleted) {
			t.pending++;
			auto &[puts, bytes] = t.pending_by[v.owner];
			puts++;
			bytes += v.size;
		}
	}
	t.repair = plan_repair(key).has_value();
	return t;
}

void MasterState::account(const std::string &key, const Tally &before, const Tally &after)
{
	versions_ += after.versions - before.versions;
	pending_ += after.pending - before.pending;
	for (const auto &[who, nb] : before.pending_by) {
		auto it = pending_by_.find(who);
		it->second.first -= nb.first;
		it->second.second -= nb.second;
		if (!it->second.first)
			pending_by_.erase(it);
	}
	for (const auto &[who, nb] : after.pending_by) {
		auto &mine = pending_by_[who];
		mine.first += nb.first;
		mine.second += nb.second;
	}
	live_objects_ += after.live - before.live;
	live_bytes_ += after.bytes - before.bytes;
	if (after.attention)
		attention_.insert(key);
	else
		attention_.erase(key);
	if (after.repair)
		repair_due_.insert(key);
	else
		repair_due_.erase(key);
}

const std::string *MasterState::record_key(const lg::Record &rec)
{
	switch (rec.rec_case()) {
	case lg::Record::kPutStart:
		return &rec.put_start().key();
	case lg::Record::kPutCommit:
		return &rec.put_commit().key();
	case lg::Record::kPutAbort:
		return &rec.put_abort().key();
	case lg::Record::kVersionDrop:
		return &rec.version_drop().key();
	case lg::Record::kReplicaAdd:
		return &rec.replica_add().key();
	case lg::Record::kReplicaDrop:
		return &rec.replica_drop().key();
	case lg::Record::kFlushed:
		return &rec.flushed().key();
	case lg::Record::kDel:
		return &rec.del().key();
	case lg::Record::kConfigSet:
		return &rec.config_set().key();
	case lg::Record::kEvict:
		return &rec.evict().key();
	case lg::Record::kSalvageDrop:
		return &rec.salvage_drop().key();
	default:
		// the others change no object's versions; a segment's end
		// takes replicas away (drop_segment_replicas accounts for
		// the keys it touches)
		return nullptr;
	}
}

int MasterState::apply(const lg::Record &rec, std::string *err)
{
	const std::string *key = record_key(rec);
	Tally before;

	if (key) {
		before = tally(*key);
		lru_out(*key);
	}
	int ret = apply_record(rec, err);
	if (key) {
		account(*key, before, tally(*key));
		lru_in(*key);
	}
	if (!ret)
		applied_++;
	return ret;
}

int MasterState::apply_record(const lg::Record &rec, std::string *err)
{
	switch (rec.rec_case()) {
	case lg::Record::kTerm:
		term_ = std::max(term_, rec.term().term());
		return 0;
	case lg::Record::kClientAdd: {
		const auto &r = rec.client_add();
		if (!r.client_id())
			return fail(err, -EINVAL, "client add without an id");
		clients_[r.client_id()] = r.member();
		next_client_id_ = std::max(next_client_id_, r.client_id() + 1);
		return 0;
	}
	case lg::Record::kClientRemove: {
		const auto &r = rec.client_remove();
		clients_.erase(r.client_id());
		for (auto &[id, s] : segments_) {
			if (s.desc.owner() != r.client_id())
				continue;
			if (r.dead()) {
				s.desc.set_state(pb::SEGMENT_DEAD);
				drop_segment_replicas(id, true);
			} else {
				// kernel memory outlives the process: readable, no
				// one's, while the leader moves its replicas off
				// (reclaim_loop); no new ones land there.  An
				// NVMe-oF namespace is the pool's, as an admin's is.
				s.desc.set_owner(0);
				if (s.desc.type() == pb::SEGMENT_DRAM &&
				    s.desc.state() != pb::SEGMENT_DEAD) {
					s.desc.set_state(pb::SEGMENT_DRAINING);
					s.desc.set_reclaimed(true);
				}
			}
		}
		return 0;
	}
	case lg::Record::kSegmentAdd:
		return apply_segment_add(rec.segment_add(), err);
	case lg::Record::kSegmentState: {
		const auto &r = rec.segment_state();
		auto it = segments_.find(r.segment_id());
		if (it == segments_.end())
			return fail(err, -EINVAL, "state of unknown segment " + std::to_string(r.segment_id()));
		it->second.desc.set_state(r.state());
		if (r.state() == pb::SEGMENT_ALIVE)
			it->second.desc.set_reclaimed(false);
		if (r.state() == pb::SEGMENT_DEAD)
			drop_segment_replicas(r.segment_id(), true);
		return 0;
	}
	case lg::Record::kSegmentRemove: {
		const auto &r = rec.segment_remove();
		if (!segments_.count(r.segment_id()))
			return fail(err, -EINVAL, "removal of unknown segment " + std::to_string(r.segment_id()));
		drop_segment_replicas(r.segment_id(), false);
		segments_.erase(r.segment_id());
		return 0;
	}
	case lg::Record::kPutStart:
		return apply_put_start(rec.put_start(), err);
	case lg::Record::kPutCommit:
		return apply_put_commit(rec.put_commit(), err);
	case lg::Record::kPutAbort: {
		const auto &r = rec.put_abort();
		const VersionState *v = find_version(r.key(), r.version());
		if (!v || v->complete)
			return fail(err, -EINVAL, "abort of " + vname(r.key(), r.version()) +
							  " which is not pending");
		erase_version(r.key(), r.version());
		return 0;
	}
	case lg::Record::kVersionDrop: {
		const auto &r = rec.version_drop();
		if (!find_version(r.key(), r.version()))
			return fail(err, -EINVAL, "drop of unknown " + vname(r.key(), r.version()));
		erase_version(r.key(), r.version());
		return 0;
	}
	case lg::Record::kReplicaAdd:
		return apply_replica_add(rec.replica_add(), err);
	case lg::Record::kReplicaDrop: {
		const auto &r = rec.replica_drop();
		VersionState *v = version_mut(r.key(), r.version());
		size_t index = r.index();
		if (v && r.has_replica()) {
			// named by its places: whatever moved it since it was planned
			index = v->replicas.size();
			for (size_t i = 0; i < v->replicas.size(); i++)
				if (!v->replicas[i].lost && same_replica(v->replicas[i].r, r.replica()))
					index = i;
		}
		if (!v || !v->complete || index >= v->replicas.size())
			return fail(err, -EINVAL, "drop of replica " + std::to_string(r.index()) +
							  " of " + vname(r.key(), r.version()) +
							  (r.has_replica() ? " which it does not have" : ""));
		free_replica(v->replicas[index].r);
		v->replicas.erase(v->replicas.begin() + static_cast<long>(index));
		return 0;
	}
	case lg::Record::kFlushed: {
		const auto &r = rec.flushed();
		auto it = objects_.find(r.key());
		if (it == objects_.end())
			return fail(err, -EINVAL, "flush of unknown key '" + r.key().substr(0, 64) + "'");
		it->second.flushed_version = std::max(it->second.flushed_version, r.version());
		return 0;
	}
	case lg::Record::kDel: {
		const auto &r = rec.del();
		auto it = objects_.find(r.key());
		if (it == objects_.end())
			return fail(err, -EINVAL, "del of unknown key '" + r.key().substr(0, 64) + "'");
		for (auto &[ver, v] : it->second.versions)
			if (ver <= r.up_to())
				v.deleted = true;
		// the slow tier's copy goes with it (the master deletes it)
		if (it->second.flushed_version <= r.up_to())
			it->second.flushed_version = 0;
		remember_del(r);
		return 0;
	}
	case lg::Record::kConfigSet: {
		const auto &r = rec.config_set();
		VersionState *v = version_mut(r.key(), r.version());
		if (!v)
			return fail(err, -EINVAL, "config of unknown " + vname(r.key(), r.version()));
		v->config = r.config();
		if (r.set_expiry())
			v->expires_ns = r.expires_ns();
		return 0;
	}
	case lg::Record::kReplicaReserve: {
		const auto &r = rec.replica_reserve();
		if (!r.id() || reservations_.count(r.id()))
			return fail(err, -EINVAL, "reservation " + std::to_string(r.id()) + " again");
		if (int ret = reserve_replica(r.replica(), err))
			return ret;
		reservations_[r.id()] = r;
		next_reservation_id_ = std::max(next_reservation_id_, r.id() + 1);
		return 0;
	}
	case lg::Record::kReplicaRelease: {
		auto it = reservations_.find(rec.replica_release().id());
		if (it == reservations_.end())
			return fail(err, -EINVAL, "release of unknown reservation " +
							  std::to_string(rec.replica_release().id()));
		free_replica(it->second.replica());
		reservations_.erase(it);
		return 0;
	}
	case lg::Record::kEvict:
		return apply_evict(rec.evict(), err);
	case lg::Record::kSalvageDrop: {
		const auto &r = rec.salvage_drop();
		VersionState *v = version_mut(r.key(), r.version());
		if (!v)
			return fail(err, -EINVAL, "salvage drop of unknown " + vname(r.key(), r.version()));
		free_salvage(r.key(), r.version(), *v);
		return 0;
	}
	case lg::Record::REC_NOT_SET:
		break;
	}
	return fail(err, -EINVAL, "an empty or unknown log record");
}

// ---- snapshot

void MasterState::snapshot(lg::Snapshot *snap) const
{
	snap->Clear();
	snap->set_term(term_);
	snap->set_next_version(next_version_);
	snap->set_next_client_id(next_client_id_);
	snap->set_next_segment_id(next_segment_id_);
	for (const auto &[id, m] : clients_) {
		lg::ClientAdd *c = snap->add_clients();
		c->set_client_id(id);
		*c->mutable_member() = m;
	}
	for (const auto &[id, s] : segments_) {
		pb::SegmentDesc *d = snap->add_segments();
		*d = s.desc;
		d->set_used(0);
	}
	for (const auto &[id, r] : reservations_)
		*snap->add_reservations() = r;
	snap->set_next_reservation_id(next_reservation_id_);
	for (const RecentDel &d : recent_dels_)
		*snap->add_recent_dels() = d.del;
	snap->set_evictions(evictions_);
	snap->set_expiries(expiries_);
	snap->set_evicted_bytes(evicted_bytes_);
	for (const auto &[key, o] : objects_) {
		lg::ObjectEntry *e = snap->add_objects();
		e->set_key(key);
		e->set_flushed_version(o.flushed_version);
		for (const auto &[ver, v] : o.versions) {
			lg::VersionEntry *ve = e->add_versions();
			ve->set_version(ver);
			ve->set_size(v.size);
			*ve->mutable_config() = v.config;
			ve->set_complete(v.complete);
			ve->set_deleted(v.deleted);
			ve->set_deadline_ns(v.deadline_ns);
			ve->set_ctime_ns(v.ctime_ns);
			*ve->mutable_sums() = v.sums;
			ve->set_client_id(v.client_id);
			if (!v.complete)
				ve->set_request_id(v.request_id);
			ve->set_owner(v.owner);
			ve->set_expires_ns(v.expires_ns);
			ve->set_evicted(v.evicted);
			for (const auto &r : v.replicas) {
				lg::ReplicaEntry *re = ve->add_replicas();
				*re->mutable_replica() = r.r;
				re->set_lost(r.lost);
				re->set_held(r.held);
			}
			for (const auto &r : v.salvage)
				*ve->add_salvage() = r;
		}
	}
}

int MasterState::restore(const lg::Snapshot &snap, std::string *err)
{
	clients_.clear();
	segments_.clear();
	lru_.clear();	// (before the keys it points to go)
	objects_.clear();
	attention_.clear();
	repair_due_.clear();
	live_objects_ = live_bytes_ = versions_ = pending_ = 0;
	pending_by_.clear();
	leases_.clear();
	lease_ends_.clear();
	salvaged_.clear();
	reservations_.clear();
	recent_dels_.clear();
	recent_by_id_.clear();
	for (const lg::Del &d : snap.recent_dels())
		remember_del(d);
	term_ = snap.term();
	evictions_ = snap.evictions();
	expiries_ = snap.expiries();
	evicted_bytes_ = snap.evicted_bytes();
	next_reservation_id_ = std::max<uint64_t>(1, snap.next_reservation_id());
	next_version_ = std::max<uint64_t>(1, snap.next_version());
	next_client_id_ = std::max<uint64_t>(1, snap.next_client_id());
	next_segment_id_ = std::max<uint64_t>(1, snap.next_segment_id());
	for (const auto &c : snap.clients())
		clients_[c.client_id()] = c.member();
	for (const auto &d : snap.segments()) {
		lg::SegmentAdd a;
		*a.mutable_desc() = d;
		if (int ret = apply_segment_add(a, err))
			return ret;
	}
	for (const auto &e : snap.objects()) {
		ObjectState &o = objects_[e.key()];
		o.flushed_version = e.flushed_version();
		for (const auto &ve : e.versions()) {
			VersionState v;
			v.version = ve.version();
			v.size = ve.size();
			v.config = ve.config();
			v.complete = ve.complete();
			v.deleted = ve.deleted();
			v.deadline_ns = ve.deadline_ns();
			v.ctime_ns = ve.ctime_ns();
			v.sums = ve.sums();
			v.client_id = ve.client_id();
			v.request_id = ve.request_id();
			v.owner = ve.owner();
			v.expires_ns = ve.expires_ns();
			v.evicted = ve.evicted();
			o.atime_ns = std::max(o.atime_ns, v.ctime_ns);
			for (const auto &re : ve.replicas()) {
				// the allocators are rebuilt from what the metadata holds
				if (!re.lost() || re.held())
					if (int ret = reserve_replica(re.replica(), err))
						return ret;
				v.replicas.push_back({ re.replica(), re.lost(), re.held() });
			}
			// (a snapshot of a log from before salvage was logged has none)
			for (const auto &sr : ve.salvage()) {
				if (int ret = reserve_replica(sr, err))
					return ret;
				v.salvage.push_back(sr);
			}
			if (!v.salvage.empty())
				salvaged_.insert({ e.key(), v.version });
			next_version_ = std::max(next_version_, v.version + 1);
			o.versions.emplace(v.version, std::move(v));
		}
		account(e.key(), {}, tally(e.key()));
		lru_in(e.key());
	}
	for (const auto &r : snap.reservations()) {
		// a segment removed since keeps no allocator to reserve in
		pb::Replica live = r.replica();
		live.clear_shards();
		for (const auto &sh : r.replica().shards())
			if (segments_.count(sh.segment_id()))
				*live.add_shards() = sh;
		if (int ret = reserve_replica(live, err))
			return ret;
		reservations_[r.id()] = r;
		next_reservation_id_ = std::max(next_reservation_id_, r.id() + 1);
	}
	return 0;
}

}  // namespace dsmem::store
