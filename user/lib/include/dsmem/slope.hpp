// SPDX-License-Identifier: BSD-2-Clause
// libdsuser -- Slope in C++20: objects that migrate between nodes without
// serialization.  Header-only, over the ds_slope_* C ABI of ds.h.
//
//   auto sp = dsmem::slope::space::open(1);	// once per process
//   using table = dsmem::slope::unordered_map<uint64_t, uint64_t>;
//   auto t = dsmem::slope::mig_ptr<table>::make();
//   {
//           auto ctx = t->create_context();	// allocations go to *t
//           (**t)[1] = 2;
//   }
//   auto m = t->migrate(2, {.on_stop = [&] { stop_my_threads(); }});
//   auto st = m->wait();			// *t is empty: the object left
//
//   // on node 2
//   auto t2 = dsmem::slope::receive<table>();	// (**t2)[1] == 2
//
// A migratable type allocates through slope::Allocator (the aliases below
// are the standard containers with it) and holds no pointer outside its
// own object: no virtual functions, std::function, pointers to globals or
// to other objects (executables are position-independent: code and data
// outside the Slope range sit at other addresses on another node).  Every
// node must run the same build: types are matched by a hash of their name
// as the compiler spells it.
//
// Errors are dsmem::result (ds.hpp), except where the standard wants an
// exception: Allocator::allocate() and create_context() throw alloc_error
// (no_context when the thread has no context open), a std::bad_alloc so
// that containers and callers treat it as the failed allocation it is.
#pragma once

#include <cerrno>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <dsmem/ds.h>
#include <dsmem/ds.hpp>

namespace dsmem::slope {

// An allocation that could not be made; code() is the negative errno.
class alloc_error : public std::bad_alloc {
public:
	alloc_error(int code, const char *msg) : code_(code), msg_(msg) {}
	const char *what() const noexcept override { return msg_.what(); }
	int code() const noexcept { return code_; }

private:
	int code_;
	std::runtime_error msg_;	// its copies share the text: no throw
};

// Allocating with no context open on this thread (-ENOENT): a slip of the
// program rather than a lack of memory, but still an allocation that did
// not happen, so a std::bad_alloc too.
class no_context : public alloc_error {
public:
	using alloc_error::alloc_error;
};

namespace detail {

[[noreturn]] inline void throw_alloc_error(int code)
{
	if (code == -ENOENT)
		throw no_context(code, ds_slope_errmsg());
	throw alloc_error(code, ds_slope_errmsg());
}

// A free the library refused: the pointer is no block of a Slope object.
// Like free() on a foreign pointer, nothing sensible can follow.
[[noreturn]] inline void bad_free(const void *p)
{
	std::fprintf(stderr, "dsmem::slope: freeing %p: %s\n", p, ds_slope_errmsg());
	std::abort();
}

constexpr uint64_t fnv1a(std::string_view s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (char c : s)
		h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
	return h;
}

}  // namespace detail

// T's name as the compiler spells it.
template <typename T>
constexpr std::string_view type_name()
{
	// GCC: "... type_name() [with T = NAME; ...]"; Clang: "... [T = NAME]"
	constexpr std::string_view f = __PRETTY_FUNCTION__;
	constexpr auto b = f.find("T = ");
	if constexpr (b == std::string_view::npos)
		return f;
	else
		return f.substr(b + 4, f.find_first_of(";]", b + 4) - (b + 4));
}

// What ds_slope_recv() matches: never 0, which means "any type" there.
template <typename T>
constexpr uint64_t type_tag()
{
	uint64_t h = detail::fnv1a(type_name<std::remove_cv_t<T>>());
	return h ? h : 1;
}

// Allocates for the object whose context is innermost on this thread;
// frees into whichever object owns the block.  Stateless: all compare
// equal, and containers may move blocks between them freely.
template <typename T>
class Allocator {
public:
	using value_type = T;
	using size_type = std::size_t;
	using difference_type = std::ptrdiff_t;
	using propagate_on_container_copy_assignment = std::true_type;
	using propagate_on_container_move_assignment = std::true_type;
	using propagate_on_container_swap = std::true_type;
	using is_always_equal = std::true_type;

	template <typename U>
	struct rebind {
		using other = Allocator<U>;
	};

	constexpr Allocator() noexcept = default;
	template <typename U>
	constexpr Allocator(const Allocator<U> &) noexcept {}

	[[nodiscard]] T *allocate(std::size_t n)
	{
		if (n > std::numeric_limits<std::size_t>::max() / sizeof(T))
			throw std::bad_array_new_length();
		void *p = nullptr;
		if (int r = ds_slope_alloc(n * sizeof(T), alignof(T), &p))
			detail::throw_alloc_error(r);
		return static_cast<T *>(p);
	}

	void deallocate(T *p, std::size_t) noexcept
	{
		if (ds_slope_free(p))
			detail::bad_free(p);
	}
};

template <typename T, typename U>
constexpr bool operator==(const Allocator<T> &, const Allocator<U> &) noexcept
{
	return true;
}

template <typename T>
using vector = std::vector<T, Allocator<T>>;
using string = std::basic_string<char, std::char_traits<char>, Allocator<char>>;
template <typename K, typename V, typename Compare = std::less<K>>
using map = std::map<K, V, Compare, Allocator<std::pair<const K, V>>>;
template <typename K, typename V, typename Hash = std::hash<K>, typename Eq = std::equal_to<K>>
using unordered_map = std::unordered_map<K, V, Hash, Eq, Allocator<std::pair<const K, V>>>;

using mig_stats = ds_slope_mig_stats;

// The pages of one object, as its sub-allocator's calls see them: whole
// 4 KiB pages of the object's own memory, taken from the pages it already
// has before new ones.  Valid during the call only.
class pages {
public:
	static constexpr std::size_t page_size = 4096;

	explicit pages(ds_slope_pages *pg) noexcept : pg_(pg) {}
	// alloc_error when the object can have no more
	void *take()
	{
		void *p = nullptr;
		if (int r = ds_slope_pages_take(pg_, &p))
			detail::throw_alloc_error(r);
		return p;
	}
	void give(void *page) noexcept
	{
		if (ds_slope_pages_give(pg_, page))
			detail::bad_free(page);
	}

private:
	ds_slope_pages *pg_;
};

// The customization point for an application's own allocator inside an
// object (the seed's pluggable allocator): allocate() places n bytes
// aligned to align in pages it takes from pg, or returns nullptr to leave
// the request to Slope's allocator; deallocate() gets back exactly the
// blocks allocate() gave.  Its state lives in the object (a member of T,
// declared before the members that allocate through it), so it travels
// with the object; install it with mig_ptr::use(), on the receiver too.
template <typename S>
concept SubAllocator = requires(S &s, pages &pg, std::size_t n, std::size_t align, void *p) {
	{ s.allocate(pg, n, align) } -> std::same_as<void *>;
	{ s.deallocate(pg, p) } noexcept;
};

namespace detail {

template <SubAllocator S>
struct suballoc_calls {
	static int alloc(void *state, ds_slope_pages *pg, size_t n, size_t align, void **p) noexcept
	{
		pages w(pg);
		try {
			*p = static_cast<S *>(state)->allocate(w, n, align);
		} catch (const alloc_error &e) {
			return e.code();
		} catch (...) {
			return -ENOMEM;
		}
		return *p ? 0 : 1;
	}
	static int free(void *state, ds_slope_pages *pg, void *p) noexcept
	{
		pages w(pg);
		static_cast<S *>(state)->deallocate(w, p);
		return 0;
	}
	static constexpr ds_slope_suballoc ops = {&alloc, &free};
};

}  // namespace detail

// mig_ptr<T>::make()'s last argument, when given.
struct options {
	bool huge = false;	// runs of 2 MiB units: for objects of many MiB
};

namespace detail {

template <typename... Args>
constexpr bool ends_with_options()
{
	if constexpr (sizeof...(Args) == 0)
		return false;
	else
		return std::is_same_v<std::remove_cvref_t<std::tuple_element_t<
					      sizeof...(Args) - 1, std::tuple<Args...>>>,
				      options>;
}

}  // namespace detail

struct migrate_options {
	uint32_t max_rounds = 0;	// prefill rounds; 0: the module's default
	uint64_t stop_pages = 0;	// stop once at most this many units are
					// dirty; 0: once the set stops shrinking
	// Called from the thread that waits for the migration when the object
	// must stop being touched: return only once no thread touches it.  It
	// must not throw (it is called through the C ABI), nor wait for this
	// migration (it runs inside that wait).
	std::function<void()> on_stop;
};

// The process's Slope space (one at most).  Closing fails while objects
// are alive; the destructor then leaves it open for them.
class space {
public:
	static result<space> open(uint32_t node)
	{
		ds_slope *sp = nullptr;
		if (int r = ds_slope_open(node, &sp))
			return error{r, ds_slope_errmsg()};
		return space(sp);
	}

	space(space &&o) noexcept : sp_(std::exchange(o.sp_, nullptr)) {}
	space &operator=(space &&o) noexcept
	{
		if (this != &o) {
			ds_slope_close(sp_);
			sp_ = std::exchange(o.sp_, nullptr);
		}
		return *this;
	}
	~space() { ds_slope_close(sp_); }

	result<void> close()
	{
		if (int r = ds_slope_close(sp_))
			return error{r, ds_slope_errmsg()};
		sp_ = nullptr;
		return {};
	}

	ds_slope *get() const { return sp_; }

	result<ds_slope_info> info() const
	{
		ds_slope_info in{};
		if (int r = ds_slope_describe(sp_, &in))
			return error{r, ds_slope_errmsg()};
		return in;
	}

private:
	explicit space(ds_slope *sp) : sp_(sp) {}
	ds_slope *sp_;
};

// The allocation target of this thread while it lives.  Contexts nest and
// must end in reverse order, which scopes give.
class [[nodiscard]] context {
public:
	context(const context &) = delete;
	context &operator=(const context &) = delete;
	~context() { ds_slope_ctx_pop(obj_); }

private:
	template <typename T>
	friend class mig_ptr;

	// alloc_error when obj takes no allocations (migrating, or gone)
	explicit context(ds_slope_obj *obj) : obj_(obj)
	{
		if (int r = ds_slope_ctx_push(obj))
			detail::throw_alloc_error(r);
	}

	ds_slope_obj *obj_;
};

// An outgoing migration.  Destroying it waits for the end, as wait() does:
// a migration cannot be called off.
class migration {
public:
	migration(migration &&o) noexcept
		: mig_(std::exchange(o.mig_, nullptr)), stop_(std::move(o.stop_))
	{
	}
	migration &operator=(migration &&o) noexcept
	{
		if (this != &o) {
			ds_slope_mig_free(mig_);
			mig_ = std::exchange(o.mig_, nullptr);
			stop_ = std::move(o.stop_);
		}
		return *this;
	}
	~migration() { ds_slope_mig_free(mig_); }

	// Drives it to the end: on_stop, the handover (the object's mig_ptr
	// is empty from then on), until the destination has every page.  The
	// final statistics, or why it failed (if before the handover, the
	// object is still here); -EINTR when a signal came: call again.
	result<mig_stats> wait()
	{
		mig_stats st{};
		if (int r = ds_slope_mig_wait(mig_, &st))
			return error{r, ds_slope_errmsg()};
		return st;
	}

	// As it is now.
	result<mig_stats> stats() const
	{
		mig_stats st{};
		if (int r = ds_slope_mig_get(mig_, &st))
			return error{r, ds_slope_errmsg()};
		return st;
	}

private:
	template <typename T>
	friend class mig_ptr;

	static void call_stop(void *arg, const ds_slope_mig_stats *) noexcept
	{
		(*static_cast<std::function<void()> *>(arg))();
	}

	migration(ds_slope_mig *mig, std::unique_ptr<std::function<void()>> stop)
		: mig_(mig), stop_(std::move(stop))
	{
	}

	ds_slope_mig *mig_;
	std::unique_ptr<std::function<void()>> stop_;	// where the C callback points
};

template <typename T>
class mig_ptr;
template <typename T>
result<mig_ptr<T>> receive(int timeout_ms = -1);

// Owns a migratable object: a T at the root of an arena of its own.
template <typename T>
class mig_ptr {
public:
	mig_ptr() = default;
	mig_ptr(mig_ptr &&o) noexcept : obj_(std::exchange(o.obj_, nullptr)) {}
	mig_ptr &operator=(mig_ptr &&o) noexcept
	{
		if (this != &o) {
			reset();
			obj_ = std::exchange(o.obj_, nullptr);
		}
		return *this;
	}
	~mig_ptr() { reset(); }

	// A T built from args in a new object, under a context of its own, so
	// that what its constructor allocates is the object's.  The last
	// argument may be options.  T's constructor's exceptions propagate
	// (the object is freed first).
	template <typename... Args>
	static result<mig_ptr> make(Args &&...args)
	{
		if constexpr (detail::ends_with_options<Args...>()) {
			return make_split(std::forward_as_tuple(std::forward<Args>(args)...),
					  std::make_index_sequence<sizeof...(Args) - 1>{});
		} else {
			return create(options{}, std::forward<Args>(args)...);
		}
	}

	// nullptr once the object has left this node.
	T *get() const noexcept
	{
		return obj_ ? static_cast<T *>(ds_slope_obj_root(obj_)) : nullptr;
	}
	T *operator->() const noexcept { return get(); }
	T &operator*() const noexcept { return *get(); }
	// Read-only access: what a migrating object should see between
	// migrate() and on_stop (the seed's const view), since a write then
	// dirties its page, which is sent again; reads dirty nothing.  A
	// caller must const_cast to write through it.
	const T *cget() const noexcept { return get(); }
	const T &cref() const noexcept { return *get(); }
	explicit operator bool() const noexcept { return get() != nullptr; }
	ds_slope_obj *handle() const noexcept { return obj_; }

	// The object's allocations go to s (which must lie in the object)
	// before Slope's own allocator; nullptr-free: see SubAllocator.
	template <SubAllocator S>
	result<void> use(S &s)
	{
		if (int r = ds_slope_obj_suballoc(obj_, &detail::suballoc_calls<S>::ops, &s))
			return error{r, ds_slope_errmsg()};
		return {};
	}
	// Back to Slope's allocator alone: -EBUSY while s holds pages.
	result<void> unuse()
	{
		if (int r = ds_slope_obj_suballoc(obj_, nullptr, nullptr))
			return error{r, ds_slope_errmsg()};
		return {};
	}

	// Allocations of this thread go to the object while it lives.
	// alloc_error when the object is migrating or has left.
	context create_context() const { return context(obj_); }

	// Start moving the object to node: see ds_slope_migrate().
	result<migration> migrate(uint32_t node, migrate_options o = {})
	{
		auto stop = std::make_unique<std::function<void()>>(std::move(o.on_stop));
		ds_slope_migrate_opts co{};
		co.max_rounds = o.max_rounds;
		co.stop_pages = o.stop_pages;
		if (*stop) {
			co.on_stop = &migration::call_stop;
			co.arg = stop.get();
		}
		ds_slope_mig *m = nullptr;
		if (int r = ds_slope_migrate(obj_, node, &co, &m))
			return error{r, ds_slope_errmsg()};
		return migration(m, std::move(stop));
	}

	result<ds_slope_obj_info> info() const
	{
		ds_slope_obj_info in{};
		if (int r = ds_slope_obj_describe(obj_, &in))
			return error{r, ds_slope_errmsg()};
		return in;
	}

	// For a received object, the migration that brought it; with wait,
	// once every page has arrived.
	result<mig_stats> incoming(bool wait = false) const
	{
		mig_stats st{};
		if (int r = ds_slope_obj_incoming(obj_, wait, &st))
			return error{r, ds_slope_errmsg()};
		return st;
	}

	// Destroy T and free the object; a migration in flight ends first
	// (and if it moved the object, there is nothing left to destroy).
	void reset() noexcept
	{
		if (!obj_)
			return;
		while (ds_slope_obj_settle(obj_) == -EINTR)
			;
		if (T *p = get())
			p->~T();
		ds_slope_obj_destroy(obj_);
		obj_ = nullptr;
	}

private:
	friend result<mig_ptr> receive<T>(int timeout_ms);

	explicit mig_ptr(ds_slope_obj *obj) : obj_(obj) {}

	template <typename Tuple, std::size_t... I>
	static result<mig_ptr> make_split(Tuple &&t, std::index_sequence<I...>)
	{
		return create(std::get<sizeof...(I)>(t), std::get<I>(std::move(t))...);
	}

	template <typename... Args>
	static result<mig_ptr> create(const options &o, Args &&...args)
	{
		ds_slope *sp = ds_slope_get();
		if (!sp)
			return error{-ENODEV, "no Slope space is open in this process"};
		ds_slope_obj *obj = nullptr;
		if (int r = ds_slope_obj_create(sp, sizeof(T), alignof(T),
						o.huge ? DS_SLOPE_HUGE : 0, type_tag<T>(), &obj))
			return error{r, ds_slope_errmsg()};
		try {
			context init(obj);
			::new (ds_slope_obj_root(obj)) T(std::forward<Args>(args)...);
		} catch (...) {
			ds_slope_obj_destroy(obj);
			throw;
		}
		return mig_ptr(obj);
	}

	ds_slope_obj *obj_ = nullptr;
};

// The next object of type T handed over to this node: see
// ds_slope_recv().  timeout_ms: -1 waits for ever.
template <typename T>
result<mig_ptr<T>> receive(int timeout_ms)
{
	ds_slope *sp = ds_slope_get();
	if (!sp)
		return error{-ENODEV, "no Slope space is open in this process"};
	ds_slope_obj *obj = nullptr;
	if (int r = ds_slope_recv(sp, type_tag<T>(), timeout_ms, &obj, nullptr)) {
		std::string msg = ds_slope_errmsg();
		if (r == -EPROTOTYPE)
			msg += "; expected a " + std::string(type_name<T>());
		return error{r, std::move(msg)};
	}
	return mig_ptr<T>(obj);
}

}  // namespace dsmem::slope
