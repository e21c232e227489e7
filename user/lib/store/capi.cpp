// SPDX-License-Identifier: BSD-2-Clause
// The object store's C ABI (DSUSER_1.6, DSSTORE_1.1): store.h over
// client.hpp.  No exception crosses it.
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "client.hpp"

#define DS_EXPORT extern "C" __attribute__((visibility("default")))

using namespace dsmem::store;

// The config is ABI: the TLS fields took the place of reserved[4].
static_assert(sizeof(void *) != 8 || sizeof(struct ds_store_config) == 72, "ds_store_config changed size");
// So are the infos, whose eviction fields (DSSTORE_1.1) took reserved
// words, and the put's options, which grow only at their end.
static_assert(sizeof(struct ds_store_object_info) == 1128, "ds_store_object_info changed size");
static_assert(offsetof(struct ds_store_object_info, expires_ns) == 1096 &&
	      offsetof(struct ds_store_object_info, reserved) == 1112,
	      "ds_store_object_info's fields moved");
static_assert(sizeof(struct ds_store_master_info) == 1248, "ds_store_master_info changed size");
static_assert(offsetof(struct ds_store_master_info, evictions) == 1216,
	      "ds_store_master_info's fields moved");
static_assert(sizeof(struct ds_store_put_opts) == 48, "ds_store_put_opts changed size");
static_assert(offsetof(struct ds_store_put_opts, reserved) == DS_STORE_PUT_OPTS_SIZE_VER0,
	      "DS_STORE_PUT_OPTS_SIZE_VER0 is not the end of ttl_ms");

namespace {

// The calling thread's last failure: a handle is shared between threads.
thread_local std::string last_error;

int fail(int ret, const std::string &why)
{
	last_error = why.empty() ? strerror(-ret) : why;
	return ret;
}

template <typename F>
int guarded(F &&f)
{
	try {
		return f();
	} catch (const std::bad_alloc &) {
		return fail(-ENOMEM, "out of memory");
	} catch (...) {
		return fail(-EIO, "internal error");
	}
}

// A call on a handle's client: f(client, &err) returns 0 or -errno with
// err its reason, kept for ds_store_errmsg.
template <typename F>
int client_call(ds_store *s, F &&f)
{
	return guarded([&] {
		if (!s)
			return fail(-EINVAL, "no store handle");
		std::string err;
		int ret = f(s->client, &err);
		return ret ? fail(ret, err) : 0;
	});
}

void to_errbuf(char *errbuf, size_t errlen, const std::string &msg)
{
	if (errbuf && errlen)
		snprintf(errbuf, errlen, "%s", msg.c_str());
}

template <size_t N>
void copy_str(char (&dst)[N], const std::string &src)
{
	size_t n = std::min(src.size(), N - 1);
	memcpy(dst, src.data(), n);
	dst[n] = '\0';
}

void to_info(const pb::ObjectInfo &o, ds_store_object_info *i)
{
	*i = {};
	copy_str(i->key, o.key());
	i->version = o.version();
	i->size = o.size();
	i->config.dram_replicas = o.config().dram_replicas();
	i->config.nvmeof_replicas = o.config().nvmeof_replicas();
	i->config.flush = static_cast<uint32_t>(o.config().flush());
	i->config.prefer_local = o.config().prefer_local();
	for (const pb::Replica &r : o.replicas()) {
		if (r.type() == pb::SEGMENT_DRAM)
			i->dram_replicas++;
		else
			i->nvmeof_replicas++;
	}
	i->flushed = o.flushed();
	i->flags = o.config().soft_pin() ? DS_STORE_OBJ_SOFT_PIN : 0;
	i->flushed_version = o.flushed_version();
	i->ctime_ns = o.ctime_ns();
	i->expires_ns = o.expires_ns();
	i->atime_ns = o.atime_ns();
}

// The read-only calls need no client: one connection, ten seconds.
template <typename Req, typename Resp>
int one_call(const char *masters, Masters::Method<Req, Resp> m, const Req &req, Resp *resp,
	     char *errbuf, size_t errlen, uint64_t timeout_ms = 10000)
{
	Masters ms;
	std::string err;
	TlsFiles tls = client_tls_files(nullptr, nullptr, nullptr, false);
	int ret = masters ? ms.set(masters, tls, &err) : (err = "no master address", -EINVAL);
	if (!ret)
		ret = ms.call(m, req, resp, Clock::now() + std::chrono::milliseconds(timeout_ms), &err);
	if (ret)
		to_errbuf(errbuf, errlen, err.empty() ? strerror(-ret) : err);
	return ret;
}

}  // namespace

DS_EXPORT int ds_store_open(const struct ds_store_config *cfg, struct ds_store **sp)
{
	return guarded([&] {
		if (!cfg || !sp)
			return fail(-EINVAL, cfg ? "no handle pointer" : "no config");
		*sp = nullptr;
		if (!cfg->masters || !*cfg->masters)
			return fail(-EINVAL, "no master address");
		if (!cfg->node_id)
			return fail(-EINVAL, "no node");
		ClientConfig c;
		c.masters = cfg->masters;
		c.node_id = cfg->node_id;
		c.addr = cfg->addr ? cfg->addr : "";
		c.segment_size = cfg->segment_size;
		c.threads = cfg->threads;
		c.timeout_ms = cfg->timeout_ms;
		if (cfg->flags & ~DS_STORE_INSECURE)
			return fail(-EINVAL, "unknown flags");
		c.tls = client_tls_files(cfg->tls_ca, cfg->tls_cert, cfg->tls_key,
					 cfg->flags & DS_STORE_INSECURE);
		if (c.threads > 256)
			return fail(-EINVAL, "at most 256 threads");
		auto s = std::make_unique<ds_store>();
		std::string err;
		if (int ret = s->client.open(c, &err)) {
			s->client.close(false);
			return fail(ret, err);
		}
		*sp = s.release();
		return 0;
	});
}

DS_EXPORT void ds_store_close(struct ds_store *s, int drain)
{
	if (!s)
		return;
	try {
		s->client.close(drain != 0);
	} catch (...) {
	}
	delete s;
}

DS_EXPORT int ds_store_close_drain(struct ds_store *s, uint64_t deadline_ms, uint64_t *moved,
				   char *errbuf, size_t errlen)
{
	if (moved)
		*moved = 0;
	if (!s) {
		to_errbuf(errbuf, errlen, "no handle");
		return -EINVAL;
	}
	int ret;
	try {
		std::string err;
		ret = s->client.close(true, deadline_ms, moved, &err);
		if (ret)
			to_errbuf(errbuf, errlen, err.empty() ? strerror(-ret) : err);
	} catch (...) {
		ret = -ENOMEM;
		to_errbuf(errbuf, errlen, "out of memory");
	}
	delete s;
	return ret;
}

DS_EXPORT const char *ds_store_errmsg(const struct ds_store *)
{
	return last_error.c_str();
}

DS_EXPORT int ds_store_put(struct ds_store *s, const char *key, const struct iovec *iov, size_t n,
			   const struct ds_store_replicate_config *cfg, uint64_t *task)
{
	return guarded([&] {
		if (!s)
			return fail(-EINVAL, "no store handle");
		std::string err;
		int ret = s->client.put(key, iov, n, cfg, PutAttrs{}, task, &err);
		return ret ? fail(ret, err) : 0;
	});
}

DS_EXPORT int ds_store_put_ex(struct ds_store *s, const char *key, const struct iovec *iov,
			      size_t n, const struct ds_store_replicate_config *cfg,
			      const struct ds_store_put_opts *opts, uint64_t *task)
{
	return guarded([&] {
		if (!s)
			return fail(-EINVAL, "no store handle");
		std::string err;
		PutAttrs attrs;
		if (int ret = read_put_opts(opts, &attrs, &err))
			return fail(ret, err);
		int ret = s->client.put(key, iov, n, cfg, attrs, task, &err);
		return ret ? fail(ret, err) : 0;
	});
}

DS_EXPORT int ds_store_batch_put(struct ds_store *s, struct ds_store_batch_item *items, size_t n,
				 const struct ds_store_replicate_config *cfg,
				 const struct ds_store_put_opts *opts, uint64_t *task)
{
	return client_call(s, [&](ClientCore &c, std::string *err) {
		PutAttrs attrs;
		if (int ret = read_put_opts(opts, &attrs, err))
			return ret;
		return c.batch_put(items, n, cfg, attrs, task, err);
	});
}

DS_EXPORT int ds_store_batch_get(struct ds_store *s, struct ds_store_batch_item *items, size_t n,
				 uint64_t *task)
{
	return client_call(s, [&](ClientCore &c, std::string *err) {
		return c.batch_get(items, n, task, err);
	});
}

DS_EXPORT int ds_store_batch_exist(struct ds_store *s, struct ds_store_batch_item *items, size_t n)
{
	return client_call(s, [&](ClientCore &c, std::string *err) {
		return c.batch_exist(items, n, err);
	});
}

DS_EXPORT int ds_store_batch_del(struct ds_store *s, struct ds_store_batch_item *items, size_t n)
{
	return client_call(s, [&](ClientCore &c, std::string *err) {
		return c.batch_del(items, n, err);
	});
}

DS_EXPORT int ds_store_set_attr(struct ds_store *s, const char *key, uint32_t mask,
				const struct ds_store_put_opts *opts)
{
	return guarded([&] {
		if (!s)
			return fail(-EINVAL, "no store handle");
		std::string err;
		if (int ret = check_key(key, &err))
			return fail(ret, err);
		constexpr uint32_t known = DS_STORE_ATTR_SOFT_PIN | DS_STORE_ATTR_TTL;
		if (!mask || (mask & ~known))
			return fail(-EINVAL, mask ? "unknown mask bits " + std::to_string(mask & ~known)
						  : std::string("an empty mask: set soft_pin, ttl or both"));
		if (!opts)
			return fail(-EINVAL, "no opts");
		PutAttrs attrs;
		if (int ret = read_put_opts(opts, &attrs, &err))
			return fail(ret, err);
		// the RPC's mask bits are the C API's
		static_assert(DS_STORE_ATTR_SOFT_PIN == pb::SET_ATTR_SOFT_PIN &&
			      DS_STORE_ATTR_TTL == pb::SET_ATTR_TTL);
		pb::SetAttrResponse r;
		int ret = s->client.set_attr(key, mask, attrs, &r, &err);
		return ret ? fail(ret, err) : 0;
	});
}

DS_EXPORT int ds_store_get(struct ds_store *s, const char *key, const struct iovec *iov, size_t n,
			   int64_t min_version, uint64_t offset, uint64_t *task)
{
	return guarded([&] {
		if (!s)
			return fail(-EINVAL, "no store handle");
		std::string err;
		int ret = s->client.get(key, iov, n, min_version, offset, task, &err);
		return ret ? fail(ret, err) : 0;
	});
}

DS_EXPORT int ds_store_replicate(struct ds_store *s, const char *key,
				 const struct ds_store_replicate_config *cfg, uint64_t *task)
{
	return guarded([&] {
		if (!s)
			return fail(-EINVAL, "no store handle");
		std::string err;
		int ret = s->client.replicate(key, cfg, task, &err);
		return ret ? fail(ret, err) : 0;
	});
}

DS_EXPORT int ds_store_del(struct ds_store *s, const char *key, uint64_t *task)
{
	return guarded([&] {
		if (!s)
			return fail(-EINVAL, "no store handle");
		std::string err;
		int ret = s->client.del(key, task, &err);
		return ret ? fail(ret, err) : 0;
	});
}

DS_EXPORT int ds_store_sync(struct ds_store *s, const char *key, uint64_t *task)
{
	return guarded([&] {
		if (!s)
			return fail(-EINVAL, "no store handle");
		std::string err;
		int ret = s->client.sync(key, task, &err);
		return ret ? fail(ret, err) : 0;
	});
}

DS_EXPORT int ds_store_task_query(struct ds_store *s, uint64_t task, int wait_ms, int release,
				  struct ds_store_task_status *st)
{
	return guarded([&] {
		if (!s || !st)
			return fail(-EINVAL, s ? "no status pointer" : "no store handle");
		if (wait_ms < -1)
			return fail(-EINVAL, "wait_ms must be -1, 0 or a time");
		std::string why;
		int ret = s->client.tasks().query(task, wait_ms, release != 0, st, &why);
		// a task that ended without completing: its reason is the
		// thread's message, as a failed call's would be
		if (!ret && st->err && st->state != DS_STORE_WAITING && st->state != DS_STORE_PENDING)
			fail(st->err, st->state == DS_STORE_INVALID && st->err == -ENOENT && why.empty()
					      ? "no such task" : why);
		return ret;
	});
}

DS_EXPORT int ds_store_task_cancel(struct ds_store *s, uint64_t task)
{
	return guarded([&] {
		if (!s)
			return fail(-EINVAL, "no store handle");
		int ret = s->client.tasks().cancel(task);
		if (ret == -EBUSY)
			return fail(ret, "the task is running or done");
		if (ret == -ENOENT)
			return fail(ret, "no such task");
		return ret;
	});
}

DS_EXPORT int ds_store_buf_reg(struct ds_store *s, void *addr, size_t len)
{
	return guarded([&] {
		if (!s)
			return fail(-EINVAL, "no store handle");
		std::string err;
		int ret = s->client.buf_reg(addr, len, &err);
		return ret ? fail(ret, err) : 0;
	});
}

DS_EXPORT int ds_store_buf_dereg(struct ds_store *s, void *addr)
{
	return guarded([&] {
		if (!s || !addr)
			return fail(-EINVAL, s ? "no buffer" : "no store handle");
		std::string err;
		int ret = s->client.buf_dereg(addr, &err);
		return ret ? fail(ret, err) : 0;
	});
}

DS_EXPORT int ds_store_list(struct ds_store *s, const char *prefix, const char *after,
			    uint32_t limit, struct ds_store_object_list **list)
{
	return guarded([&] {
		if (!s || !list)
			return fail(-EINVAL, s ? "no list pointer" : "no store handle");
		*list = nullptr;
		pb::ListResponse resp;
		std::string err;
		if (int ret = s->client.list(prefix ? prefix : "", after ? after : "", limit, &resp, &err))
			return fail(ret, err);
		auto *l = static_cast<ds_store_object_list *>(calloc(1, sizeof(ds_store_object_list)));
		if (!l)
			return fail(-ENOMEM, "out of memory");
		size_t n = static_cast<size_t>(resp.objects_size());
		l->objects = static_cast<ds_store_object_info *>(calloc(n ? n : 1, sizeof(ds_store_object_info)));
		if (!l->objects) {
			free(l);
			return fail(-ENOMEM, "out of memory");
		}
		for (size_t i = 0; i < n; i++)
			to_info(resp.objects(static_cast<int>(i)), &l->objects[i]);
		l->count = n;
		l->more = resp.more();
		*list = l;
		return 0;
	});
}

DS_EXPORT void ds_store_list_free(struct ds_store_object_list *list)
{
	if (!list)
		return;
	free(list->objects);
	free(list);
}

DS_EXPORT int ds_store_stat(struct ds_store *s, const char *key, struct ds_store_object_info *info)
{
	return guarded([&] {
		if (!s || !info)
			return fail(-EINVAL, s ? "no info pointer" : "no store handle");
		std::string err;
		if (int ret = check_key(key, &err))
			return fail(ret, err);
		pb::ObjectInfo o;
		if (int ret = s->client.stat(key, &o, &err))
			return fail(ret, err);
		to_info(o, info);
		return 0;
	});
}

DS_EXPORT int ds_store_health_get(struct ds_store *s, struct ds_store_health *h, size_t size)
{
	return guarded([&] {
		if (!s || !h)
			return fail(-EINVAL, s ? "no health pointer" : "no store handle");
		if (size > sizeof(ds_store_health))
			return fail(-E2BIG, "a struct ds_store_health of " + std::to_string(size) +
						    " bytes; this library knows " +
						    std::to_string(sizeof(ds_store_health)));
		ds_store_health all;
		s->client.health(&all);
		std::memcpy(h, &all, size);
		return 0;
	});
}

DS_EXPORT int ds_store_master_info(const char *masters, struct ds_store_master_info *info,
				   char *errbuf, size_t errlen)
{
	return guarded([&] {
		if (!info) {
			to_errbuf(errbuf, errlen, "no info pointer");
			return -EINVAL;
		}
		pb::MasterInfoRequest req;
		pb::MasterInfoResponse r;
		if (int ret = one_call(masters, &pb::Master::Stub::MasterInfo, req, &r, errbuf, errlen))
			return ret;
		*info = {};
		copy_str(info->leader, r.leader());
		std::string standbys;
		for (const std::string &sb : r.standbys())
			standbys += (standbys.empty() ? "" : ",") + sb;
		copy_str(info->standbys, standbys);
		copy_str(info->persistence, r.persistence());
		copy_str(info->slow_tier, r.slow_tier());
		info->term = r.term();
		info->objects = r.objects();
		info->versions = r.versions();
		info->metadata_bytes = r.metadata_bytes();
		info->log_records = r.log_records();
		info->global_version = r.global_version();
		info->members = static_cast<uint64_t>(r.members_size());
		info->ops = r.ops();
		info->evictions = r.evictions();
		info->expiries = r.expiries();
		info->evicted_bytes = r.evicted_bytes();
		info->high_watermark_pct = r.high_watermark_pct();
		info->low_watermark_pct = r.low_watermark_pct();
		return 0;
	});
}

// ABI: flags took the place of reserved[0]'s low half
static_assert(sizeof(ds_store_segment_info) == 384);

namespace {

void segment_info(const pb::SegmentDesc &d, ds_store_segment_info *o)
{
	*o = {};
	o->id = d.id();
	o->type = static_cast<uint32_t>(d.type());
	o->state = static_cast<uint32_t>(d.state());
	o->size = d.size();
	o->used = d.used();
	o->owner = d.owner();
	o->node_id = d.node_id();
	o->trsvcid = d.trsvcid();
	o->gaddr = d.gaddr();
	o->base = d.base();
	copy_str(o->traddr, d.traddr());
	copy_str(o->subnqn, d.subnqn());
	o->flags = d.reclaimed() ? DS_STORE_SEGMENT_RECLAIMED : 0;
}

}  // namespace

DS_EXPORT int ds_store_segment_list(const char *masters, struct ds_store_segment_info **segs,
				    size_t *count, char *errbuf, size_t errlen)
{
	return guarded([&] {
		if (!segs || !count) {
			to_errbuf(errbuf, errlen, "no result pointer");
			return -EINVAL;
		}
		*segs = nullptr;
		*count = 0;
		pb::SegmentListRequest req;
		pb::SegmentListResponse r;
		if (int ret = one_call(masters, &pb::Master::Stub::SegmentList, req, &r, errbuf, errlen))
			return ret;
		size_t n = static_cast<size_t>(r.segments_size());
		auto *out = static_cast<ds_store_segment_info *>(calloc(n ? n : 1, sizeof(ds_store_segment_info)));
		if (!out) {
			to_errbuf(errbuf, errlen, "out of memory");
			return -ENOMEM;
		}
		for (size_t i = 0; i < n; i++)
			segment_info(r.segments(static_cast<int>(i)), &out[i]);
		*segs = out;
		*count = n;
		return 0;
	});
}

DS_EXPORT int ds_store_segment_drain(const char *masters, uint64_t segment_id,
				     uint64_t deadline_ms, uint64_t *moved, char *errbuf,
				     size_t errlen)
{
	return guarded([&] {
		if (moved)
			*moved = 0;
		if (!segment_id) {
			to_errbuf(errbuf, errlen, "no segment id");
			return -EINVAL;
		}
		pb::UnregisterSegmentRequest req;
		pb::UnregisterSegmentResponse r;
		req.set_segment_id(segment_id);
		req.set_drain(true);
		req.set_deadline_ms(deadline_ms);
		// the master's default deadline is its own: wait as long as it may
		uint64_t wait = (deadline_ms ? deadline_ms : 24ULL * 3600 * 1000) + 10000;
		if (int ret = one_call(masters, &pb::Master::Stub::UnregisterSegment, req, &r, errbuf,
				       errlen, wait))
			return ret;
		if (moved)
			*moved = r.moved();
		return 0;
	});
}

DS_EXPORT int ds_store_watch(const char *masters, uint32_t timeout_ms,
			     int (*cb)(const struct ds_store_event *ev, void *arg), void *arg,
			     char *errbuf, size_t errlen)
{
	return guarded([&] {
		if (!cb) {
			to_errbuf(errbuf, errlen, "no callback");
			return -EINVAL;
		}
		Masters ms;
		std::string err;
		TlsFiles tls = client_tls_files(nullptr, nullptr, nullptr, false);
		if (int ret = masters ? ms.set(masters, tls, &err) : (err = "no master address", -EINVAL)) {
			to_errbuf(errbuf, errlen, err);
			return ret;
		}
		auto end = timeout_ms ? Clock::now() + std::chrono::milliseconds(timeout_ms)
				      : Clock::time_point::max();
		// a standby points to the leader; a master that goes, to the next
		for (int tries = 0; tries < 8; tries++) {
			std::string addr;
			auto stub = ms.current(&addr);
			grpc::ClientContext ctx;
			if (timeout_ms)
				ctx.set_deadline(std::chrono::system_clock::now() +
						 std::chrono::duration_cast<std::chrono::system_clock::duration>(
							 std::max(end - Clock::now(), Clock::duration::zero())));
			pb::WatchRequest req;
			auto reader = stub->Watch(&ctx, req);
			pb::Event ev;
			bool got = false, stopped = false;
			while (!stopped && reader->Read(&ev)) {
				// a stream that delivered: its end is a new start
				got = true;
				tries = 0;
				ds_store_event e{};
				const pb::Member *m = nullptr;
				switch (ev.ev_case()) {
				case pb::Event::kMemberJoined:
					e.type = DS_STORE_EV_MEMBER_JOINED;
					m = &ev.member_joined();
					break;
				case pb::Event::kMemberLeft:
					e.type = DS_STORE_EV_MEMBER_LEFT;
					m = &ev.member_left();
					break;
				case pb::Event::kSegmentSetup:
					e.type = DS_STORE_EV_SEGMENT_SETUP;
					segment_info(ev.segment_setup(), &e.segment);
					break;
				case pb::Event::kSegmentRemoved:
					e.type = DS_STORE_EV_SEGMENT_REMOVED;
					segment_info(ev.segment_removed(), &e.segment);
					break;
				case pb::Event::kSegmentDraining:
					e.type = DS_STORE_EV_SEGMENT_DRAINING;
					segment_info(ev.segment_draining(), &e.segment);
					break;
				default:
					continue;	// a newer master's kind
				}
				if (m) {
					e.client_id = m->client_id();
					e.node_id = m->node_id();
					e.port = m->port();
					copy_str(e.addr, m->addr());
				}
				stopped = cb(&e, arg) != 0;
			}
			if (stopped) {
				ctx.TryCancel();
				reader->Finish();
				return 0;
			}
			grpc::Status st = reader->Finish();
			if (Clock::now() >= end ||
			    (st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && timeout_ms))
				return 0;
			std::string hint;
			if (not_leader(st, &hint) && !hint.empty()) {
				ms.follow(hint);
				continue;
			}
			if (st.error_code() == grpc::StatusCode::UNAVAILABLE) {
				ms.forget(addr);
				ms.advance(addr);
				if (!got)
					std::this_thread::sleep_for(std::chrono::milliseconds(100));
				continue;
			}
			to_errbuf(errbuf, errlen, addr + ": " + st.error_message());
			return st.ok() ? 0 : status_to_errno(st);
		}
		to_errbuf(errbuf, errlen, "no master streams its events");
		return -EAGAIN;
	});
}

DS_EXPORT int ds_store_nvmeof_register(const char *masters, const char *traddr, uint32_t trsvcid,
				       const char *subnqn, uint64_t base, uint64_t size,
				       uint64_t *segment_id, char *errbuf, size_t errlen)
{
	return guarded([&] {
		if (!traddr || !*traddr || !subnqn || !*subnqn || !trsvcid || !size) {
			to_errbuf(errbuf, errlen, "traddr, trsvcid, subnqn and size are needed");
			return -EINVAL;
		}
		if (base % 4096 || size % 4096) {
			to_errbuf(errbuf, errlen, "base and size must be multiples of 4096");
			return -EINVAL;
		}
		pb::RegisterSegmentRequest req;
		pb::RegisterSegmentResponse r;
		pb::SegmentDesc *d = req.mutable_desc();
		d->set_type(pb::SEGMENT_NVMEOF);
		d->set_size(size);
		d->set_traddr(traddr);
		d->set_trsvcid(trsvcid);
		d->set_subnqn(subnqn);
		d->set_base(base);
		if (int ret = one_call(masters, &pb::Master::Stub::RegisterSegment, req, &r, errbuf, errlen))
			return ret;
		if (segment_id)
			*segment_id = r.segment_id();
		return 0;
	});
}
