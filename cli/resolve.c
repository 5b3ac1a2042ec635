/*
 * resolve.c - turning what a user types (a project name) into server ids.
 */
#include "cli.h"

#include "ed_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_done(cli *c, int err)
{
    cli_free(c);
    return cli_report(err);
}

static bool looks_like_id(const char *s)
{
    if (s[0] != 'p' || strlen(s) != 13)
        return false;
    for (const char *p = s + 1; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
            return false;
    return true;
}

int cli_project_resolve(char *out, size_t n, cli *c, const char *ref)
{
    char path[512], found[64] = "", me[128] = "";
    json_t *j = NULL, *user = NULL;
    char *cursor = NULL;
    int err, matches = 0;

    if (ref == NULL || ref[0] == '\0')
        return ed_error_set(CLI_EUSAGE, "a project id or name is needed");
    if (strlen(ref) > 200)
        return ed_error_set(CLI_EUSAGE, "project '%.40s...' is too long to be a name", ref);
    if (looks_like_id(ref)) {
        snprintf(path, sizeof(path), "/api/v1/projects/%s", ref);
        err = cli_call_json(&j, c, "GET", path, NULL, 0);
        json_decref(j);
        if (err == 0) {
            snprintf(out, n, "%s", ref);
            return 0;
        }
        if (err != ED_ENOTFOUND)
            return err;
    }
    /* by name, among the caller's own projects */
    if ((err = cli_call_json(&user, c, "GET", "/api/v1/me", NULL, 0)) < 0)
        return err;
    snprintf(me, sizeof(me), "%s", json_string_value(json_object_get(user, "username")) ?: "");
    json_decref(user);
    for (int pages = 0; pages < 100; pages++) {
        char *esc = cursor ? cli_escape(cursor, false) : NULL;
        size_t i;
        json_t *p, *next;

        snprintf(path, sizeof(path), "/api/v1/projects?limit=500%s%s", esc ? "&cursor=" : "",
                 esc ? esc : "");
        free(esc);
        free(cursor);
        cursor = NULL;
        if ((err = cli_call_json(&j, c, "GET", path, NULL, 0)) < 0)
            return err;
        json_array_foreach(json_object_get(j, "items"), i, p) {
            const char *name = json_string_value(json_object_get(p, "name"));
            const char *owner = json_string_value(json_object_get(p, "owner"));
            const char *id = json_string_value(json_object_get(p, "id"));
            if (name && id && owner && strcmp(name, ref) == 0 && strcmp(owner, me) == 0) {
                matches++;
                snprintf(found, sizeof(found), "%s", id);
            }
        }
        next = json_object_get(j, "next_cursor");
        if (json_is_string(next) && (cursor = strdup(json_string_value(next))) == NULL) {
            json_decref(j);
            return ed_error_set(ED_ENOMEM, "cursor");
        }
        json_decref(j);
        if (cursor == NULL)
            break;
    }
    free(cursor);
    if (matches == 0)
        return ed_error_set(ED_ENOTFOUND, "not_found: no project '%s' (give its id or one of your "
                                          "project names; `eddy projects list`)", ref);
    if (matches > 1)
        return ed_error_set(CLI_EUSAGE, "%d of your projects are named '%s': give the id", matches,
                            ref);
    snprintf(out, n, "%s", found);
    return 0;
}
