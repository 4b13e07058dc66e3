/* test_report_html.c — report.html rendered by headless Chromium: the DOM
 * after load must show the summary counts, the failing case first, its
 * heatmap, hostile case ids as text (never markup), working filter script,
 * and a complete page with JavaScript off.
 *
 * Needs Chromium (Debian package `chromium`; the CI setup installs it).
 * Without it this test FAILS on purpose: a report nobody rendered is
 * untested.
 *
 * Run: ctest --test-dir build -R test_report_html --output-on-failure
 */
#include <criterion/criterion.h>

#include <fcntl.h>

#include "tests/test_report_fixture.h"

static const char *find_chromium(void)
{
    static char found[1024];
    static const char *names[] = {"chromium", "chromium-browser", "google-chrome"};
    const char *path = getenv("PATH");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char copy[4096];
        snprintf(copy, sizeof copy, "%s", path ? path : "/usr/bin:/bin");
        for (char *save = NULL, *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
            snprintf(found, sizeof found, "%s/%s", dir, names[i]);
            if (access(found, X_OK) == 0)
                return found;
        }
    }
    return NULL;
}

/* stdout of chromium --dump-dom (stderr, full of D-Bus noise, dropped) */
static char *dump_dom(const char *html_path, const char *hash)
{
    const char *chromium = find_chromium();
    cr_assert_not_null(chromium, "chromium not found on PATH: the HTML report tests need headless Chromium "
                                 "(Debian: apt-get install -y chromium)");
    char profile[256], url[1100];
    fix_tmpdir(profile, sizeof profile);
    char user_data[300];
    snprintf(user_data, sizeof user_data, "--user-data-dir=%s", profile);
    snprintf(url, sizeof url, "file://%s%s", html_path, hash);
    char *argv[] = {"timeout", "120", (char *)chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", user_data, "--dump-dom", url, NULL};
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2);
        close(fds[0]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    ssize_t got;
    while ((got = read(fds[0], buf + len, cap - len - 1)) > 0) {
        len += (size_t)got;
        if (len + 1 == cap)
            buf = realloc(buf, cap *= 2);
    }
    buf[len] = '\0';
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s --dump-dom %s failed (status %d)", chromium, url, status);
    cr_assert_gt(len, 1000, "chromium dumped only %zu bytes", len);
    return buf;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void write_html(char *path, size_t n)
{
    swa_run_results rr;
    fix_results(&rr);
    char dir[256];
    fix_tmpdir(dir, sizeof dir);
    swa_error err = {0};
    cr_assert_eq(swa_report_write_all(&rr, dir, &err), SWA_OK, "%s", err.message);
    snprintf(path, n, "%s/report.html", dir);
    swa_run_results_free(&rr);
}

Test(report_html, renders_summary_failures_heatmap_and_escapes, .timeout = 240)
{
    char path[300];
    write_html(path, sizeof path);
    char *dom = dump_dom(path, "");

    /* summary counts on top */
    cr_expect(strstr(dom, "<h1>swadiff: 3 of 6 failed</h1>") != NULL, "verdict heading missing");
    cr_expect(strstr(dom, "id=\"count-failed\"><b>3</b>") != NULL, "failed count");
    cr_expect(strstr(dom, "id=\"count-passed\"><b>1</b>") != NULL, "passed count");
    cr_expect(strstr(dom, "id=\"count-error\"><b>1</b>") != NULL, "error count");
    cr_expect(strstr(dom, "id=\"count-skipped\"><b>1</b>") != NULL, "skipped count");

    /* the failing seed case is the first row of the overview, worst first */
    const char *overview = strstr(dom, "<table class=\"overview\">");
    cr_assert_not_null(overview, "overview table missing");
    const char *tbody = strstr(overview, "<tbody>");
    cr_assert_not_null(tbody);
    const char *first_row = strstr(tbody, "<tr");
    const char *seed = strstr(tbody, "seeds/000_paged_prefill:extend=[6,8,12]");
    const char *passing = strstr(tbody, "decode/window_sweep");
    cr_assert(first_row && seed && passing, "overview rows missing");
    cr_expect(strncmp(first_row, "<tr class=\"failed\"", 18) == 0, "first row: %.80s", first_row);
    cr_expect(seed < strstr(first_row + 3, "<tr"), "the seed case should be the first row");
    cr_expect(seed < passing, "failing cases come before passing ones");
    cr_expect(strstr(dom, "640 / 832 (76.9%)") != NULL, "mismatch count of the failing case");

    /* the failing case's details are open, with the heatmap and its legend */
    cr_expect(strstr(dom, "<details class=\"case failed\" id=\"case-0\"") != NULL);
    cr_expect_geq(count(dom, "<svg class=\"heatmap\""), 2, "heatmaps of the output-mismatch failures");
    cr_expect(strstr(dom, "error / allowed:") != NULL, "heatmap legend");
    cr_expect(strstr(dom, "window binds: p − L = ") != NULL, "window strip");
    cr_expect(strstr(dom, "Diagnosis:") != NULL);
    cr_expect(strstr(dom, "swadiff run --backend prefill --device host --filter") != NULL, "reproduce command");

    /* hostile id: text, never markup; exactly one script element (ours) */
    cr_expect(strstr(dom, "<script>alert(1)") == NULL, "case id injected a script element");
    cr_expect_eq(count(dom, "<script"), 1, "script elements in the DOM");
    cr_expect(strstr(dom, "&lt;script&gt;alert(1)&lt;/script&gt;&amp;]]&gt;\"") != NULL,
              "the hostile id should be shown as text");
    cr_expect(strstr(dom, "data-text=\"&lt;script&gt;alert(1)&lt;/script&gt;&amp;]]&gt;&quot;") != NULL,
              "the hostile id should stay inside its attribute");

    /* the filter script ran: bar visible, counter filled in */
    cr_expect(strstr(dom, "<div class=\"filters\" id=\"filters\">") != NULL, "filter bar should be shown with JS");
    cr_expect(strstr(dom, "6 shown") != NULL, "filter counter");
    free(dom);
}

/* Is the overview row whose data-text starts with id_prefix hidden?  Looks
 * at that row's start tag only. */
static bool row_hidden(const char *dom, const char *id_prefix)
{
    char needle[300];
    snprintf(needle, sizeof needle, "data-text=\"%s", id_prefix);
    const char *at = strstr(dom, needle);
    cr_assert_not_null(at, "no overview row for %s", id_prefix);
    const char *start = at;
    while (start > dom && strncmp(start, "<tr", 3))
        start--;
    const char *end = strchr(at, '>');
    const char *h = strstr(start, " hidden");
    return h && h < end;
}

Test(report_html, filter_from_link_hides_other_cases, .timeout = 240)
{
    char path[300];
    write_html(path, sizeof path);
    /* failed cases whose text contains "decode": the hostile fp32 case and
     * the LSE case; the prefill failure and every non-failure are hidden */
    char *dom = dump_dom(path, "#show=failed&q=decode");
    cr_expect(strstr(dom, "2 shown") != NULL, "filter counter:\n%.200s", strstr(dom, "id=\"shown\""));
    cr_expect(row_hidden(dom, "seeds/000_paged_prefill"), "the prefill failure should be hidden");
    cr_expect(row_hidden(dom, "decode/window_sweep"), "the passing case should be hidden");
    cr_expect(row_hidden(dom, "decode/cuda_graph"), "the error should be hidden");
    cr_expect_not(row_hidden(dom, "decode/aiter_lse"), "the matching LSE failure should stay visible");
    cr_expect_not(row_hidden(dom, "&lt;script&gt;"), "the matching hostile failure should stay visible");
    free(dom);

    /* and the unfiltered page hides nothing */
    dom = dump_dom(path, "");
    cr_expect_not(row_hidden(dom, "seeds/000_paged_prefill"));
    cr_expect_not(row_hidden(dom, "decode/window_sweep"));
    free(dom);
}

/* Without JavaScript the browser shows the file as written: check that the
 * page is complete and its tags balance (Python's html.parser; headless
 * Chromium's --dump-dom needs script to serialise, so it cannot tell). */
static const char BALANCE[] =
    "import sys\n"
    "from html.parser import HTMLParser\n"
    "VOID = {'meta', 'input', 'br', 'hr', 'img', 'link'}  # rect/line: self-closed or with a <title>\n"
    "class P(HTMLParser):\n"
    "    def __init__(s):\n"
    "        super().__init__(); s.stack = []; s.errors = []; s.details = 0\n"
    "    def handle_starttag(s, tag, attrs):\n"
    "        if tag == 'details': s.details += 1\n"
    "        if tag not in VOID: s.stack.append((tag, s.getpos()))\n"
    "    def handle_startendtag(s, tag, attrs):\n"
    "        pass\n"
    "    def handle_endtag(s, tag):\n"
    "        if not s.stack or s.stack[-1][0] != tag:\n"
    "            s.errors.append('line %d: </%s> closes %s' % (s.getpos()[0], tag, s.stack[-1] if s.stack else 'nothing'))\n"
    "        else: s.stack.pop()\n"
    "p = P(); p.feed(open(sys.argv[1], encoding='utf-8').read()); p.close()\n"
    "for e in p.errors[:5]: print(e)\n"
    "if p.stack: print('unclosed:', p.stack[-5:])\n"
    "print('details', p.details)\n"
    "sys.exit(1 if p.errors or p.stack else 0)\n";

Test(report_html, complete_without_javascript)
{
    char path[300], out[4096];
    write_html(path, sizeof path);
    char *argv[] = {"python3", "-c", (char *)BALANCE, path, NULL};
    int rc = fix_run(argv, out, sizeof out);
    cr_expect_eq(rc, 0, "report.html tags do not balance (python3 html.parser):\n%s", out);
    cr_expect(strstr(out, "details 7") != NULL, "six case blocks and the environment block expected:\n%s", out);
    char *html = fix_read_file(path);
    cr_assert_not_null(html);
    cr_expect(strstr(html, "id=\"filters\" hidden") != NULL, "filter bar should stay hidden without JS");
    cr_expect(strstr(html, "filtering needs JavaScript") != NULL, "the page should say why there is no filter");
    cr_expect_eq(count(html, "<details class=\"case "), 6, "every case should have its details block");
    cr_expect(strstr(html, "<details class=\"case failed\" id=\"case-0\" data-outcome=\"failed\"") != NULL);
    cr_expect(strstr(html, "<svg class=\"heatmap\"") != NULL);
    free(html);
}

Test(report_html, self_contained)
{
    char path[300];
    write_html(path, sizeof path);
    char *html = fix_read_file(path);
    cr_assert_not_null(html);
    /* no external resources of any kind */
    cr_expect(strstr(html, "<link") == NULL, "external stylesheet/link");
    cr_expect(strstr(html, "src=") == NULL, "external script or image");
    cr_expect(strstr(html, "url(") == NULL, "CSS url()");
    cr_expect(strstr(html, "@import") == NULL, "CSS @import");
    cr_expect(strstr(html, "http:") == NULL && strstr(html, "https:") == NULL && strstr(html, "//fonts") == NULL,
              "no URL may appear in the page");
    free(html);
}
