// SPDX-License-Identifier: BSD-2-Clause
// Users, sessions and logins.  Passwords: libsodium's crypto_pwhash_str
// (Argon2id, its "interactive" cost).  Session tokens: 32 random bytes;
// the database keeps their BLAKE2b hash.  Failed logins are counted per
// user name and per client address in the database, so a restart does
// not reset them.
#include <map>

#include <sodium.h>

#include "ui.hpp"

namespace dsui {

namespace {

std::string hex(const unsigned char *p, size_t n)
{
	std::string s(n * 2, '0');

	sodium_bin2hex(s.data(), s.size() + 1, p, n);
	return s;
}

std::string random_hex(size_t bytes)
{
	std::vector<unsigned char> b(bytes);

	randombytes_buf(b.data(), b.size());
	return hex(b.data(), b.size());
}

std::string token_hash(const std::string &token)
{
	unsigned char h[crypto_generichash_BYTES];

	crypto_generichash(h, sizeof(h), reinterpret_cast<const unsigned char *>(token.data()),
			   token.size(), nullptr, 0);
	return hex(h, sizeof(h));
}

std::string hash_password(const std::string &password)
{
	char out[crypto_pwhash_STRBYTES];

	if (crypto_pwhash_str(out, password.data(), password.size(),
			      crypto_pwhash_OPSLIMIT_INTERACTIVE,
			      crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0)
		raise(500, "cannot hash the password: out of memory");
	return out;
}

void init_sodium()
{
	if (sodium_init() < 0)
		raise(500, "libsodium cannot start");
}

}  // namespace

bool valid_name(const std::string &name)
{
	if (name.empty() || name.size() > name_max)
		return false;
	for (unsigned char c : name)
		if (!isalnum(c) && c != '.' && c != '_' && c != '-')
			return false;
	return true;
}

// The rules of a user's name, role and password: "dsctl ui user" and the
// console's user page both check through these, and only these.
void check_name(const std::string &name)
{
	if (!valid_name(name))
		raise(400, "a user name is 1 to " + std::to_string(name_max) +
		      " letters, digits, '.', '_' or '-'");
}

void check_role(const std::string &role)
{
	if (role != "admin" && role != "viewer")
		raise(400, "role is admin or viewer, not \"" + role + "\"");
}

void check_password(const std::string &password)
{
	if (password.size() < password_min || password.size() > password_max)
		raise(400, "a password has " + std::to_string(password_min) + " to " +
		      std::to_string(password_max) + " characters");
}

void user_add(db &d, const std::string &name, const std::string &password, const std::string &role)
{
	init_sodium();
	check_name(name);
	check_role(role);
	check_password(password);
	std::string h = hash_password(password);
	std::lock_guard<std::recursive_mutex> g(d.lock_);
	stmt q = d.prepare("SELECT 1 FROM users WHERE name = ?");
	if (q.bind(name).step())
		raise(409, "user " + name + " exists");
	d.prepare("INSERT INTO users (name, hash, role, created) VALUES (?, ?, ?, ?)")
		.bind(name).bind(h).bind(role).bind(now_s()).run();
}

namespace {

// The user's role; 404 when there is none.  Under d.lock_, in a
// transaction: another process ("dsctl ui user" beside the server)
// changes the table only between transactions.
std::string role_of(db &d, const std::string &name)
{
	stmt q = d.prepare("SELECT role FROM users WHERE name = ?");
	if (!q.bind(name).step())
		raise(404, "no user " + name);
	return q.text(0);
}

// Refuse to leave the console without an admin: nobody could then manage
// users from the browser (nor change the cache) until someone with the
// server's database ran "dsctl ui user add" again.
void keep_an_admin(db &d, const std::string &name, const std::string &what)
{
	if (role_of(d, name) != "admin")
		return;
	stmt q = d.prepare("SELECT count(*) FROM users WHERE role = 'admin'");
	q.step();
	if (q.i64(0) <= 1)
		raise(409, name + " is the last admin: " + what + " would leave no one to manage the console");
}

// fn inside BEGIN IMMEDIATE ... COMMIT, rolled back when it throws.
template <typename F>
void transaction(db &d, F fn)
{
	std::lock_guard<std::recursive_mutex> g(d.lock_);
	d.begin();
	try {
		fn();
	} catch (...) {
		d.rollback();
		throw;
	}
	d.commit();
}

}  // namespace

void user_del(db &d, const std::string &name)
{
	transaction(d, [&] {
		keep_an_admin(d, name, "removing it");
		// its sessions go with it (ON DELETE CASCADE)
		d.prepare("DELETE FROM users WHERE name = ?").bind(name).run();
	});
}

std::string user_set_role(db &d, const std::string &name, const std::string &role)
{
	check_role(role);
	std::string was;
	transaction(d, [&] {
		was = role_of(d, name);
		if (role != "admin")
			keep_an_admin(d, name, "making it a " + role);
		d.prepare("UPDATE users SET role = ? WHERE name = ?").bind(role).bind(name).run();
	});
	return was;
}

void user_set_password(db &d, const std::string &name, const std::string &password)
{
	init_sodium();
	check_password(password);
	std::string h = hash_password(password);
	transaction(d, [&] {
		role_of(d, name);
		d.prepare("UPDATE users SET hash = ? WHERE name = ?").bind(h).bind(name).run();
		// a reset password ends the sessions the old one opened
		d.prepare("DELETE FROM sessions WHERE user_id = (SELECT id FROM users WHERE name = ?)")
			.bind(name).run();
	});
}

json user_list(db &d)
{
	json out = json::array();
	stmt q = d.prepare("SELECT name, role, created FROM users ORDER BY name");

	while (q.step())
		out.push_back({ { "name", q.text(0) }, { "role", q.text(1) }, { "created", q.f64(2) } });
	return out;
}

int64_t user_count(db &d)
{
	stmt q = d.prepare("SELECT count(*) FROM users");
	q.step();
	return q.i64(0);
}

login_result login(db &d, const std::string &name, const std::string &password,
		   const std::string &addr, uint64_t ttl)
{
	login_result r{ 401, {}, {}, 0 };
	double now = now_s();

	init_sodium();
	{
		std::lock_guard<std::recursive_mutex> g(d.lock_);
		d.prepare("DELETE FROM login_failures WHERE ts < ?")
			.bind(now - login_fail_window).run();
		// the oldest failure of the window decides when a try is allowed
		for (const char *col : { "name", "addr" }) {
			stmt q = d.prepare(std::string("SELECT count(*), min(ts) FROM login_failures WHERE ") +
					   col + " = ?");
			bool by_name = std::string(col) == "name";
			q.bind(by_name ? name : addr).step();
			if (q.i64(0) >= (by_name ? login_fail_max_user : login_fail_max_addr)) {
				r.status = 429;
				r.retry_after = std::max(1, int(q.f64(1) + login_fail_window - now + 1));
				// one line in the log per name and address a minute,
				// not one per refused try
				static std::map<std::string, double> logged;
				double &last = logged[name + '\n' + addr];
				r.log_refusal = now - last >= refusal_log_interval;
				if (r.log_refusal)
					last = now;
				if (logged.size() > 10000)
					logged.clear();
				return r;
			}
		}
		// counted before the password is checked: tries made at once
		// cannot all pass the count; a success takes it back
		d.prepare("INSERT INTO login_failures (name, addr, ts) VALUES (?, ?, ?)")
			.bind(name).bind(addr).bind(now).run();
	}

	std::string hash, role;
	int64_t uid = 0;
	{
		stmt q = d.prepare("SELECT id, hash, role FROM users WHERE name = ?");
		if (q.bind(name).step()) {
			uid = q.i64(0);
			hash = q.text(1);
			role = q.text(2);
		}
	}
	// an unknown user costs the same verification as a known one, so the
	// time taken does not tell which names exist
	static const std::string dummy = hash_password("not a password of anyone");
	const std::string &against = uid ? hash : dummy;
	bool ok = password.size() <= password_max &&
		  crypto_pwhash_str_verify(against.c_str(), password.data(), password.size()) == 0;
	if (!ok || !uid)
		return r;

	r.status = 200;
	r.token = random_hex(32);
	r.s = { uid, name, role, random_hex(32), now + double(ttl) };
	std::lock_guard<std::recursive_mutex> g(d.lock_);
	d.prepare("DELETE FROM login_failures WHERE name = ?").bind(name).run();
	d.prepare("DELETE FROM sessions WHERE expires < ?").bind(now).run();
	d.prepare("INSERT INTO sessions (token_hash, user_id, csrf, created, expires) VALUES (?, ?, ?, ?, ?)")
		.bind(token_hash(r.token)).bind(uid).bind(r.s.csrf).bind(now).bind(r.s.expires).run();
	return r;
}

std::optional<session> session_get(db &d, const std::string &token, uint64_t ttl, bool touch)
{
	if (token.size() != 64)
		return std::nullopt;
	std::string th = token_hash(token);
	double now = now_s();
	std::lock_guard<std::recursive_mutex> g(d.lock_);
	stmt q = d.prepare("SELECT s.user_id, u.name, u.role, s.csrf, s.expires FROM sessions s"
			   " JOIN users u ON u.id = s.user_id WHERE s.token_hash = ?");
	if (!q.bind(th).step())
		return std::nullopt;
	if (q.f64(4) < now) {
		d.prepare("DELETE FROM sessions WHERE token_hash = ?").bind(th).run();
		return std::nullopt;
	}
	session s{ q.i64(0), q.text(1), q.text(2), q.text(3), touch ? now + double(ttl) : q.f64(4) };
	if (touch)
		d.prepare("UPDATE sessions SET expires = ? WHERE token_hash = ?").bind(s.expires).bind(th).run();
	return s;
}

void session_end(db &d, const std::string &token)
{
	d.prepare("DELETE FROM sessions WHERE token_hash = ?").bind(token_hash(token)).run();
}

std::string login_csrf_new()
{
	return random_hex(32);
}

}  // namespace dsui
