// SPDX-License-Identifier: BSD-2-Clause
/*
 * The web console beside the module: `dsctl ui` in the guest hears the
 * module's netlink events and shows them on its log page's API; its
 * cluster view reads the module (Slope's ranges too); an admin's cache
 * change reaches the module and is audited.  HTTP through libcurl, as a
 * browser would.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>
#include <dsmem/ds.h>

#include "kselftest_harness.h"
#include "util.h"

#define NODE_ID		7
#define NODE_PORT	18777

struct buf {
	char *data;
	size_t len;
};

static size_t collect(char *p, size_t size, size_t n, void *arg)
{
	struct buf *b = arg;
	char *grown = realloc(b->data, b->len + size * n + 1);

	if (!grown)
		return 0;
	b->data = grown;
	memcpy(b->data + b->len, p, size * n);
	b->len += size * n;
	b->data[b->len] = '\0';
	return size * n;
}

FIXTURE(ui) {
	char dir[64];
	pid_t pid;
	int port;
	CURL *curl;
	char csrf[80];
	struct ds_ctx *ctx;
};

/* One request; the body (caller frees) and the HTTP status. */
static long request(struct __test_metadata *_metadata, FIXTURE_DATA(ui) *self,
		    const char *method, const char *path, const char *body, char **out)
{
	struct buf b = { NULL, 0 };
	struct curl_slist *h = NULL;
	char url[256], tok[128];
	long status = 0;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", self->port, path);
	curl_easy_setopt(self->curl, CURLOPT_URL, url);
	curl_easy_setopt(self->curl, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(self->curl, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(self->curl, CURLOPT_WRITEDATA, &b);
	if (strcmp(method, "GET")) {
		curl_easy_setopt(self->curl, CURLOPT_POSTFIELDS, body ? body : "");
		h = curl_slist_append(h, "Content-Type: application/json");
		snprintf(tok, sizeof(tok), "X-CSRF-Token: %s", self->csrf);
		h = curl_slist_append(h, tok);
	} else {
		curl_easy_setopt(self->curl, CURLOPT_HTTPGET, 1L);
	}
	curl_easy_setopt(self->curl, CURLOPT_HTTPHEADER, h);
	EXPECT_EQ(CURLE_OK, curl_easy_perform(self->curl));
	curl_easy_getinfo(self->curl, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	if (out)
		*out = b.data ? b.data : strdup("");
	else
		free(b.data);
	return status;
}

/* Until GET path's body holds every needle (~20 s): true when it did. */
static bool wait_for(struct __test_metadata *_metadata, FIXTURE_DATA(ui) *self,
		     const char *path, const char *n1, const char *n2)
{
	for (int k = 0; k < 200; k++) {
		char *body;
		bool found;

		request(_metadata, self, "GET", path, NULL, &body);
		found = strstr(body, n1) && (!n2 || strstr(body, n2));
		free(body);
		if (found)
			return true;
		usleep(100000);
	}
	return false;
}

FIXTURE_SETUP(ui)
{
	char line[256] = "", *body, *c;
	int out[2];
	size_t n = 0;

	ASSERT_EQ(0, ds_ctx_open(&self->ctx));
	ds_node_del(self->ctx, NODE_ID);
	strcpy(self->dir, "/tmp/ui_test.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	ASSERT_EQ(0, run("printf 'admin-password\\n' | %s ui user add root role admin db %s/ui.db",
			 dsctl_path(), self->dir));

	ASSERT_EQ(0, pipe(out));
	self->pid = fork();
	ASSERT_GE(self->pid, 0);
	if (self->pid == 0) {
		char db[96];

		snprintf(db, sizeof(db), "%s/ui.db", self->dir);
		dup2(out[1], 1);
		close(out[0]);
		execl(dsctl_path(), "dsctl", "ui", "listen", "127.0.0.1:0", "db", db, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	while (n < sizeof(line) - 1 && read(out[0], line + n, 1) == 1 && line[n] != '\n')
		n++;
	line[n] = '\0';
	close(out[0]);
	c = strrchr(line, ':');
	ASSERT_NE(NULL, c) TH_LOG("dsctl ui said \"%s\"", line);
	self->port = atoi(c + 1);
	ASSERT_GT(self->port, 0);

	self->curl = curl_easy_init();
	ASSERT_NE(NULL, self->curl);
	curl_easy_setopt(self->curl, CURLOPT_COOKIEFILE, "");	/* cookies on */
	/* the login form's CSRF token, with its cookie, then the login */
	ASSERT_EQ(200, request(_metadata, self, "GET", "/api/login", NULL, &body));
	c = strstr(body, "\"csrf\":\"");
	ASSERT_NE(NULL, c);
	snprintf(self->csrf, sizeof(self->csrf), "%.64s", c + 8);
	free(body);
	ASSERT_EQ(200, request(_metadata, self, "POST", "/api/login",
			       "{\"user\":\"root\",\"password\":\"admin-password\"}", &body));
	c = strstr(body, "\"csrf\":\"");
	ASSERT_NE(NULL, c);
	snprintf(self->csrf, sizeof(self->csrf), "%.64s", c + 8);
	free(body);
	/* events sent before the console listens would not be heard */
	ASSERT_TRUE(wait_for(_metadata, self, "/api/logs?component=console&q=listening",
			     "listening to the module", NULL));
}

FIXTURE_TEARDOWN(ui)
{
	char cmd[128];
	int st;

	ds_node_del(self->ctx, NODE_ID);
	ds_ctx_close(self->ctx);
	if (self->curl)
		curl_easy_cleanup(self->curl);
	if (self->pid > 0) {
		kill(self->pid, SIGTERM);
		waitpid(self->pid, &st, 0);
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", self->dir);
	EXPECT_EQ(0, run("%s", cmd));
}

/* (180 s each: two of them outlasted the harness's 30 s on a loaded host) */
TEST_F_TIMEOUT(ui, module_events_reach_the_log_page, 180)
{
	char needle[64];

	ASSERT_EQ(0, test_node_add(self->ctx, NODE_ID, "rxe0", NODE_PORT));
	snprintf(needle, sizeof(needle), "\"node\":%d", NODE_ID);
	EXPECT_TRUE(wait_for(_metadata, self, "/api/logs?component=node&limit=10",
			     "node_new node 7", needle));
	ASSERT_EQ(0, ds_node_del(self->ctx, NODE_ID));
	EXPECT_TRUE(wait_for(_metadata, self, "/api/logs?component=node&node=7&limit=10",
			     "node_del node 7", NULL));
	/* the filters apply to module events too */
	EXPECT_TRUE(wait_for(_metadata, self, "/api/logs?component=node&q=NODE_DEL", "node_del", NULL));
}

TEST_F_TIMEOUT(ui, cluster_view_reads_the_module, 180)
{
	char *body;

	ASSERT_EQ(0, test_node_add(self->ctx, NODE_ID, "rxe0", NODE_PORT));
	ASSERT_EQ(200, request(_metadata, self, "GET", "/api/cluster", NULL, &body));
	EXPECT_NE(NULL, strstr(body, "\"module\":true")) TH_LOG("%s", body);
	EXPECT_NE(NULL, strstr(body, "\"port\":18777"));
	EXPECT_NE(NULL, strstr(body, "\"cache\":{"));
	free(body);
	/* Slope's part of the view: every node has a part of the range */
	ASSERT_EQ(200, request(_metadata, self, "GET", "/api/cluster/slope", NULL, &body));
	EXPECT_NE(NULL, strstr(body, "\"module\":true")) TH_LOG("%s", body);
	EXPECT_NE(NULL, strstr(body, "{\"node\":7,")) TH_LOG("%s", body);
	EXPECT_NE(NULL, strstr(body, "\"migrations\":["));
	free(body);
}

TEST_F_TIMEOUT(ui, admin_changes_the_cache_and_it_is_audited, 180)
{
	struct ds_cache_info *before = calloc(1, sizeof(*before)), *after = calloc(1, sizeof(*after));
	char *body;
	uint64_t want;

	ASSERT_NE(NULL, before);
	ASSERT_NE(NULL, after);
	ASSERT_EQ(0, ds_cache_get(self->ctx, before));
	want = before->params[DS_CACHE_P_PROMOTE_L1] == 100 ? 101 : 100;
	{
		char req[96];

		snprintf(req, sizeof(req), "{\"params\":{\"promote_l1\":%llu}}", (unsigned long long)want);
		ASSERT_EQ(200, request(_metadata, self, "POST", "/api/cluster/cache", req, &body));
		free(body);
	}
	ASSERT_EQ(0, ds_cache_get(self->ctx, after));
	EXPECT_EQ(want, after->params[DS_CACHE_P_PROMOTE_L1]);
	EXPECT_TRUE(wait_for(_metadata, self, "/api/logs?component=audit", "changed cache settings",
			     "promote_l1"));
	/* the module's own event for it arrives too */
	EXPECT_TRUE(wait_for(_metadata, self, "/api/logs?component=cache", "cache_set", NULL));
	/* a value the module refuses is the request's error, and changes nothing */
	ASSERT_EQ(400, request(_metadata, self, "POST", "/api/cluster/cache",
			       "{\"params\":{\"promote_l1\":0}}", &body));
	EXPECT_NE(NULL, strstr(body, "\"error\""));
	free(body);
	ASSERT_EQ(0, ds_cache_get(self->ctx, after));
	EXPECT_EQ(want, after->params[DS_CACHE_P_PROMOTE_L1]);
	ds_cache_set(self->ctx, before->params, 1ULL << DS_CACHE_P_PROMOTE_L1, 0, NULL);
	free(before);
	free(after);
}

TEST_HARNESS_MAIN
