/* datasets_json.c - the JSON shapes of datasets/ds.h's objects (see
 * datasets_int.h). Times are RFC 3339 like every other area's. */
#include "datasets_int.h"
#include "acct.h"

#include "ed_error.h"
#include "ed_time.h"

#include <stdio.h>
#include <string.h>

static json_t *time_json(int64_t ms)
{
    char buf[ED_RFC3339_LEN];

    return json_string(ed_time_rfc3339(buf, sizeof(buf), ms));
}

void gw__ds_owner_name(char *out, size_t size, gw_server *srv, int64_t owner_id)
{
    acct_user u;

    out[0] = '\0';
    if (acct_user_get(&u, srv->store, owner_id) == 0)
        snprintf(out, size, "%s", u.username);
    ed_error_clear();
}

json_t *gw__ds_dataset_json(gw_server *srv, const ds_dataset *s)
{
    char owner[40];
    json_t *tags = json_array();

    if (tags == NULL)
        return NULL;
    for (size_t i = 0; i < s->ntags; i++)
        if (json_array_append_new(tags, json_string(s->tags[i])) < 0) {
            json_decref(tags);
            return NULL;
        }
    gw__ds_owner_name(owner, sizeof(owner), srv, s->owner_id);
    return json_pack("{s:s, s:s?, s:I, s:s, s:s, s:s, s:s, s:o, s:s, s:I, s:o, s:o, s:b}", "id",
                     s->id, "owner", owner[0] ? owner : NULL, "owner_id", (json_int_t)s->owner_id,
                     "slug", s->slug, "name", s->name, "description",
                     s->description ? s->description : "", "license",
                     s->license ? s->license : "", "tags", tags, "visibility",
                     ds_visibility_name(s->visibility), "latest_version",
                     (json_int_t)s->latest_version, "created_at", time_json(s->created_at),
                     "updated_at", time_json(s->updated_at), "can_write", (int)s->can_write);
}

json_t *gw__ds_file_json(const ds_file *f)
{
    return json_pack("{s:s, s:I, s:s, s:s}", "path", f->path, "size", (json_int_t)f->size,
                     "sha256", f->sha256, "media_type", f->media_type);
}

json_t *gw__ds_files_json(const ds_file_list *l)
{
    json_t *a = json_array();

    for (size_t i = 0; a && l && i < l->count; i++)
        if (json_array_append_new(a, gw__ds_file_json(&l->items[i])) < 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

json_t *gw__ds_version_json(const ds_version *v)
{
    json_t *source = NULL, *o;

    if (v->source && v->source[0])
        source = json_loads(v->source, 0, NULL);
    o = json_pack("{s:I, s:s, s:o?, s:I, s:I, s:o, s:I}", "number", (json_int_t)v->number,
                  "message", v->message ? v->message : "", "source", source, "size_bytes",
                  (json_int_t)v->size_bytes, "file_count", (json_int_t)v->file_count,
                  "created_at", time_json(v->created_at), "created_by",
                  (json_int_t)v->created_by);
    if (o && v->files) {
        json_t *files = gw__ds_files_json(v->files);
        if (files == NULL || json_object_set_new(o, "files", files) < 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}
