// SPDX-License-Identifier: BSD-2-Clause
// The per-object arena (see arena.hpp).
//
// Free spans of a small run are kept with boundary tags: the first and the
// last descriptor of a free span say pk_free and its length, so freeing a
// span merges it with free neighbours in O(1).  Every page of an allocated
// span but its head says pk_inner, and a freed head says pk_free at once,
// so the only descriptors that name a live block are the heads of live
// blocks: a pointer into anything else is refused, not freed.
#include "arena.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

namespace dsmem::slope::detail {

namespace {

thread_local std::string last_error;

// The header run's descriptors follow the header.
constexpr uint64_t header_desc_off = (sizeof(arena_header) + 63) & ~uint64_t(63);

// class_for()'s answer for alignments up to 16, by (size + 15) / 16.
constexpr auto class_by_16 = [] {
	std::array<uint8_t, small_max / 16 + 1> t{};
	unsigned c = 0;
	for (unsigned i = 0; i < t.size(); i++) {
		while (class_size[c] < i * 16)
			c++;
		t[i] = static_cast<uint8_t>(c);
	}
	return t;
}();

unsigned bin_of(uint32_t pages)
{
	return std::min<unsigned>(std::bit_width(pages) - 1, nbins - 1);
}

// Pages of descriptors (and header) at the start of a small run of len bytes.
uint32_t meta_pages_of(uint64_t len, uint64_t desc_off)
{
	uint64_t bytes = desc_off + (len >> page_shift) * sizeof(page_desc);
	return static_cast<uint32_t>((bytes + page_size - 1) >> page_shift);
}

uint64_t round_up(uint64_t v, uint64_t unit)
{
	return (v + unit - 1) & ~(unit - 1);
}

}  // namespace

int fail(int err, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	last_error = buf;
	return err;
}

const char *errmsg()
{
	return last_error.c_str();
}

int class_for(size_t size, size_t align)
{
	if (size > small_max || align > small_max)
		return -1;
	if (align <= 16)
		return class_by_16[(size + 15) / 16];
	for (unsigned c = 0; c < nclasses; c++)
		if (class_size[c] >= size && class_size[c] % align == 0)
			return static_cast<int>(c);
	return -1;
}

int arena::create(run_source &src, uint32_t flags, uint64_t type_tag, arena_header **out)
{
	const bool is_huge = flags & arena_huge;
	const uint64_t len = is_huge ? huge_unit : first_run;
	uint64_t addr;

	if (int ret = src.take(len, is_huge, &addr))
		return ret;
	auto *h = reinterpret_cast<arena_header *>(addr);
	h->magic = arena_magic;
	h->format = arena_format;
	h->flags = flags & arena_huge;
	h->self = addr;
	h->type_tag = type_tag;
	h->unit = is_huge ? huge_unit : page_size;
	h->next_run = 2 * len;
	h->runs = h->runs_inline;
	h->runs_cap = inline_runs;

	run_entry &r = h->runs[0];
	r.addr = addr;
	r.len = len;
	r.descs = reinterpret_cast<page_desc *>(addr + header_desc_off);
	r.meta_pages = meta_pages_of(len, header_desc_off);
	h->nruns = 1;
	arena(h, src).link_free(r.descs + r.meta_pages,
				static_cast<uint32_t>(len >> page_shift) - r.meta_pages);
	*out = h;
	return 0;
}

const char *arena::check(const arena_header *h, uint64_t lo, uint64_t hi, uint64_t pages)
{
	const uint64_t self = reinterpret_cast<uint64_t>(h);

	if (h->magic != arena_magic)
		return "no Slope object header there (bad magic)";
	if (h->format != arena_format)
		return "a Slope object header of an unknown format";
	if (h->self != self)
		return "the object header was written at another address";
	if (h->flags & ~arena_huge || h->unit != (h->flags & arena_huge ? huge_unit : page_size))
		return "the object header's flags or unit are damaged";
	if (!h->nruns || h->nruns > h->runs_cap)
		return "the object's run table is damaged";

	// The table must lie in the object before its entries are read (a
	// wild pointer would fault); where exactly is checked below.
	const uint64_t table = reinterpret_cast<uint64_t>(h->runs);
	const bool inline_table = h->runs == h->runs_inline;
	if (inline_table ? h->runs_cap != inline_runs :
	    table < lo || table >= hi || table % alignof(run_entry) ||
	    h->runs_cap > (hi - table) / sizeof(run_entry))
		return "the object's run table is damaged";

	const uint64_t root = reinterpret_cast<uint64_t>(h->root);
	bool header_run = false, table_inside = inline_table, root_inside = false;
	uint64_t total = 0, prev_end = 0;
	for (uint32_t i = 0; i < h->nruns; i++) {
		const run_entry &r = h->runs[i];
		const uint64_t run_pages = r.len >> page_shift;

		if (r.addr % h->unit || !r.len || r.len % h->unit || r.addr < lo || r.addr >= hi ||
		    r.len > hi - r.addr)
			return "a run of the object is not whole units of the Slope range";
		if (i && r.addr < prev_end)
			return "the object's runs overlap or are out of order";
		if (r.descs) {
			const uint64_t off = r.addr == self ? header_desc_off : 0;
			if (reinterpret_cast<uint64_t>(r.descs) != r.addr + off ||
			    r.meta_pages != meta_pages_of(r.len, off) || r.used > run_pages - r.meta_pages)
				return "the object's page descriptors are damaged";
		}
		header_run |= r.addr == self && r.descs;
		table_inside |= table - r.addr < r.len &&
			h->runs_cap * sizeof(run_entry) <= r.addr + r.len - table;
		root_inside |= root - r.addr < r.len;
		total += run_pages;
		prev_end = r.addr + r.len;
	}
	if (!header_run)
		return "the object header does not begin a run of its own";
	if (!table_inside)
		return "the object's run table lies outside the object";
	if (!root_inside)
		return "the object's root lies outside the object";
	if (pages && total != pages)
		return "the object's runs do not add up to the pages that arrived";
	return nullptr;
}

int arena::find_run(uint64_t addr) const
{
	uint32_t lo = 0, hi = h_->nruns;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (h_->runs[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr - h_->runs[lo - 1].addr >= h_->runs[lo - 1].len)
		return -1;
	return static_cast<int>(lo - 1);
}

// A small run's descriptors lie in the run itself.
run_entry &arena::run_of(const page_desc *d) const
{
	return h_->runs[find_run(reinterpret_cast<uint64_t>(d))];
}

// Room in the run table for one more run.  The table is a block of the
// arena itself, so growing it may take a run: one slot is always kept
// spare for that, and growing never nests.
int arena::reserve_run_slot()
{
	if (h_->nruns + 2 > h_->runs_cap && !growing_) {
		const uint32_t cap = h_->runs_cap * 2;
		void *mem = nullptr;

		growing_ = true;
		int ret = allocate(cap * sizeof(run_entry), alignof(run_entry), &mem);
		growing_ = false;
		if (!ret) {
			run_entry *old = h_->runs;
			std::memcpy(mem, old, h_->nruns * sizeof(run_entry));
			h_->runs = static_cast<run_entry *>(mem);
			h_->runs_cap = cap;
			if (old != h_->runs_inline)
				deallocate(old);
		}
	}
	if (h_->nruns + 1 > h_->runs_cap)
		return fail(-ENOMEM, "the object's run table is full (%u runs)", h_->nruns);
	return 0;
}

void arena::insert_run(const run_entry &r)
{
	run_entry *runs = h_->runs;
	uint32_t i = 0;

	while (i < h_->nruns && runs[i].addr < r.addr)
		i++;
	std::memmove(&runs[i + 1], &runs[i], (h_->nruns - i) * sizeof(run_entry));
	runs[i] = r;
	h_->nruns++;
}

// Forget run i and give it back; a small run must be empty (one free span).
void arena::drop_run(uint32_t i)
{
	const run_entry r = h_->runs[i];
	const extent e = {r.addr, r.len};

	if (r.descs)
		unlink_free(r.descs + r.meta_pages);
	std::memmove(&h_->runs[i], &h_->runs[i + 1], (h_->nruns - i - 1) * sizeof(run_entry));
	h_->nruns--;
	src_.give_back(&e, 1);
}

int arena::add_small_run(uint32_t pages)
{
	uint64_t len = h_->next_run, addr;

	if (int ret = reserve_run_slot())
		return ret;
	while ((len >> page_shift) - meta_pages_of(len, 0) < pages)
		len += h_->unit;
	if (int ret = src_.take(len, huge(), &addr))
		return ret;

	run_entry r = {};
	r.addr = addr;
	r.len = len;
	r.descs = reinterpret_cast<page_desc *>(addr);
	r.meta_pages = meta_pages_of(len, 0);
	insert_run(r);
	h_->next_run = std::min(2 * h_->next_run, huge() ? max_huge_run : max_run);
	link_free(r.descs + r.meta_pages, static_cast<uint32_t>(len >> page_shift) - r.meta_pages);
	return 0;
}

void arena::link_free(page_desc *d, uint32_t pages)
{
	page_desc *tail = d + pages - 1;
	page_desc *&bin = h_->spans[bin_of(pages)];

	d->kind = pk_free;
	d->span = static_cast<uint16_t>(pages);
	tail->kind = pk_free;
	tail->span = static_cast<uint16_t>(pages);
	d->prev = nullptr;
	d->next = bin;
	if (bin)
		bin->prev = d;
	bin = d;
}

void arena::unlink_free(page_desc *d)
{
	if (d->prev)
		d->prev->next = d->next;
	else
		h_->spans[bin_of(d->span)] = d->next;
	if (d->next)
		d->next->prev = d->prev;
}

page_desc *arena::find_span(uint32_t pages) const
{
	for (unsigned b = bin_of(pages); b < nbins; b++)
		for (page_desc *s = h_->spans[b]; s; s = s->next)
			if (s->span >= pages)
				return s;
	return nullptr;
}

// The first free span that fits, split; from a new small run when none
// does (which then has one that fits).
int arena::take_span(uint32_t pages, uint8_t kind, page_desc **out)
{
	page_desc *s = find_span(pages);

	if (!s) {
		if (int ret = add_small_run(pages))
			return ret;
		s = find_span(pages);
	}

	run_entry &r = run_of(s);
	const uint32_t have = s->span;
	unlink_free(s);
	if (have > pages)
		link_free(s + pages, have - pages);
	s->kind = kind;
	s->span = static_cast<uint16_t>(pages);
	s->page = r.addr + (static_cast<uint64_t>(s - r.descs) << page_shift);
	for (uint32_t i = 1; i < pages; i++)
		s[i].kind = pk_inner;
	r.used += pages;
	*out = s;
	return 0;
}

// Free the block headed by d: merge with free neighbours, and give the
// run back when it is all free, unless it holds the header or is the one
// empty run kept spare (so that an object hovering at a run boundary does
// not take and give back a run on every allocation).
void arena::free_span(page_desc *d)
{
	run_entry &r = run_of(d);
	const uint32_t run_pages = static_cast<uint32_t>(r.len >> page_shift);
	uint32_t pages = d->span;
	uint32_t idx = static_cast<uint32_t>(d - r.descs);

	r.used -= pages;
	d->kind = pk_free;
	if (idx > r.meta_pages && d[-1].kind == pk_free) {
		page_desc *left = d - d[-1].span;
		unlink_free(left);
		pages += left->span;
		d = left;
		idx = static_cast<uint32_t>(d - r.descs);
	}
	if (idx + pages < run_pages && d[pages].kind == pk_free) {
		unlink_free(d + pages);
		pages += d[pages].span;
	}
	link_free(d, pages);
	if (r.used || hold_ || r.addr == h_->self)
		return;
	for (uint32_t i = 0; i < h_->nruns; i++) {
		const run_entry &o = h_->runs[i];
		if (&o != &r && o.descs && !o.used && o.addr != h_->self) {
			drop_run(static_cast<uint32_t>(&r - h_->runs));
			return;
		}
	}
}

int arena::slab_alloc(unsigned cls, void **p)
{
	const uint16_t size = class_size[cls];
	page_desc *d = h_->partial[cls];
	uint64_t block;

	if (!d) {
		if (int ret = take_span(1, pk_slab, &d))
			return ret;
		d->cls = static_cast<uint8_t>(cls);
		d->live = 0;
		d->carved = 0;
		d->free_head = 0;
		d->prev = nullptr;
		d->next = nullptr;
		h_->partial[cls] = d;
		h_->slab_pages++;
	}
	if (d->free_head) {
		block = d->page + d->free_head - 1;
		std::memcpy(&d->free_head, reinterpret_cast<void *>(block), sizeof(d->free_head));
	} else {
		block = d->page + static_cast<uint64_t>(d->carved) * size;
		d->carved++;
	}
	if (++d->live == page_size / size) {	// full: off the partial list
		h_->partial[cls] = d->next;
		if (d->next)
			d->next->prev = nullptr;
	}
	h_->live_bytes += size;
	h_->live_blocks++;
	*p = reinterpret_cast<void *>(block);
	return 0;
}

int arena::slab_free(page_desc *d, uint64_t addr)
{
	const uint16_t size = class_size[d->cls];
	const uint64_t off = addr - d->page;
	const bool was_full = d->live == page_size / size;
	const uint16_t next = d->free_head;

	if (off % size || off >= static_cast<uint64_t>(d->carved) * size || !d->live)
		return fail(-EINVAL, "%#llx is not a block of this object",
			    static_cast<unsigned long long>(addr));
	std::memcpy(reinterpret_cast<void *>(addr), &next, sizeof(next));
	d->free_head = static_cast<uint16_t>(off + 1);
	d->live--;
	h_->live_bytes -= size;
	h_->live_blocks--;

	page_desc *&head = h_->partial[d->cls];
	if (!d->live) {
		if (!was_full) {
			if (d->prev)
				d->prev->next = d->next;
			else
				head = d->next;
			if (d->next)
				d->next->prev = d->prev;
		}
		h_->slab_pages--;
		free_span(d);
	} else if (was_full) {
		d->prev = nullptr;
		d->next = head;
		if (head)
			head->prev = d;
		head = d;
	}
	return 0;
}

int arena::large_alloc(size_t size, size_t align, void **p)
{
	const uint64_t len = round_up(size, h_->unit);
	uint64_t addr;

	if (align > h_->unit)
		return fail(-EINVAL, "alignment %zu is more than the object's unit (%llu bytes)",
			    align, static_cast<unsigned long long>(h_->unit));
	if (int ret = reserve_run_slot())
		return ret;
	if (int ret = src_.take(len, huge(), &addr))
		return ret;

	run_entry r = {};
	r.addr = addr;
	r.len = len;
	r.used = size;
	insert_run(r);
	h_->live_bytes += len;
	h_->live_blocks++;
	*p = reinterpret_cast<void *>(addr);
	return 0;
}

int arena::allocate(size_t size, size_t align, void **p)
{
	if (!align || (align & (align - 1)))
		return fail(-EINVAL, "alignment %zu is not a power of two", align);
	if (size > alloc_max)
		return fail(-ENOMEM, "%zu bytes: more than a Slope object can hold", size);
	if (!size)
		size = 1;

	int cls = class_for(size, align);
	if (cls >= 0)
		return slab_alloc(static_cast<unsigned>(cls), p);

	const uint64_t pages = (size + page_size - 1) >> page_shift;
	if (align <= page_size && pages <= medium_max()) {
		page_desc *d;
		if (int ret = take_span(static_cast<uint32_t>(pages), pk_medium, &d))
			return ret;
		h_->medium_pages += pages;
		h_->live_bytes += pages << page_shift;
		h_->live_blocks++;
		*p = reinterpret_cast<void *>(d->page);
		return 0;
	}
	return large_alloc(size, align, p);
}

int arena::deallocate(void *p)
{
	const uint64_t addr = reinterpret_cast<uint64_t>(p);
	const int i = find_run(addr);

	if (i < 0)
		return fail(-EINVAL, "%p is not in this object", p);
	run_entry &r = h_->runs[i];
	if (!r.descs) {
		if (addr != r.addr || !r.used)
			return fail(-EINVAL, "%p is not a block of this object", p);
		h_->live_bytes -= r.len;
		h_->live_blocks--;
		r.used = 0;
		if (!hold_)
			drop_run(static_cast<uint32_t>(i));
		return 0;
	}

	page_desc *d = r.descs + ((addr - r.addr) >> page_shift);
	if (d->kind == pk_slab)
		return slab_free(d, addr);
	if (d->kind != pk_medium || addr != d->page)
		return fail(-EINVAL, "%p is not a block of this object", p);
	h_->medium_pages -= d->span;
	h_->live_bytes -= static_cast<uint64_t>(d->span) << page_shift;
	h_->live_blocks--;
	free_span(d);
	return 0;
}

int arena::sub_page_take(void **p)
{
	page_desc *d;

	if (int ret = take_span(1, pk_sub, &d))
		return ret;
	h_->sub_pages++;
	h_->live_bytes += page_size;
	h_->live_blocks++;
	*p = reinterpret_cast<void *>(d->page);
	return 0;
}

uint64_t arena::sub_page(const void *p) const
{
	const uint64_t addr = reinterpret_cast<uint64_t>(p);
	const int i = find_run(addr);

	if (i < 0 || !h_->runs[i].descs)
		return 0;
	const run_entry &r = h_->runs[i];
	const page_desc *d = r.descs + ((addr - r.addr) >> page_shift);
	return d->kind == pk_sub ? addr & ~(page_size - 1) : 0;
}

int arena::sub_page_give(void *p)
{
	const uint64_t addr = reinterpret_cast<uint64_t>(p);

	if (addr % page_size || sub_page(p) != addr)
		return fail(-EINVAL, "%p is no sub-allocator page of this object", p);
	run_entry &r = h_->runs[find_run(addr)];
	h_->sub_pages--;
	h_->live_bytes -= page_size;
	h_->live_blocks--;
	free_span(r.descs + ((addr - r.addr) >> page_shift));
	return 0;
}

void arena::release()
{
	std::vector<extent> all(h_->nruns);

	// copied first: the table itself lives in one of the runs
	for (uint32_t i = 0; i < h_->nruns; i++)
		all[i] = {h_->runs[i].addr, h_->runs[i].len};
	src_.give_back(all.data(), all.size());
}

void arena::hold_runs(bool hold)
{
	bool spare = false;

	hold_ = hold;
	if (hold)
		return;
	for (uint32_t i = h_->nruns; i-- > 0;) {
		const run_entry &r = h_->runs[i];
		if (r.used || r.addr == h_->self)
			continue;
		if (r.descs && !spare)
			spare = true;
		else
			drop_run(i);
	}
}

std::vector<extent> arena::extents() const
{
	std::vector<extent> out;

	for (uint32_t i = 0; i < h_->nruns; i++) {
		const run_entry &r = h_->runs[i];
		if (!out.empty() && out.back().addr + out.back().len == r.addr)
			out.back().len += r.len;
		else
			out.push_back({r.addr, r.len});
	}
	return out;
}

arena_usage arena::usage() const
{
	arena_usage u = {};

	u.runs = h_->nruns;
	u.extents = static_cast<uint32_t>(extents().size());
	for (uint32_t i = 0; i < h_->nruns; i++) {
		u.pages += h_->runs[i].len >> page_shift;
		u.large_runs += !h_->runs[i].descs;
	}
	for (page_desc *bin : h_->spans)
		for (page_desc *s = bin; s; s = s->next)
			u.free_pages += s->span;
	return u;
}

}  // namespace dsmem::slope::detail
