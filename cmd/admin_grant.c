/*
 * eddy admin grant --data DIR --username U (--mcoins N | --coins X) --reason R
 *                  [--idempotency-key K]
 *
 * Grant A-coins to a user from the operator's shell, through the same ledger
 * as POST /api/v1/admin/users/{id}/grants. Without a key, one is made up, so
 * running the command twice grants twice; pass --idempotency-key to make a
 * retry safe.
 */
#include "acct.h"
#include "cmd.h"
#include "quota.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_store.h"

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
    fprintf(stderr, "usage: eddy admin grant --data DIR --username U (--mcoins N | --coins X) "
                    "--reason TEXT [--idempotency-key K]\n");
    return 2;
}


int cmd_admin_grant(int argc, char **argv)
{
    static const struct option opts[] = {
        {"data", required_argument, 0, 'd'},   {"username", required_argument, 0, 'u'},
        {"mcoins", required_argument, 0, 'm'}, {"coins", required_argument, 0, 'c'},
        {"reason", required_argument, 0, 'r'}, {"idempotency-key", required_argument, 0, 'k'},
        {0, 0, 0, 0},
    };
    const char *data = NULL, *username = NULL, *reason = NULL, *key = NULL;
    char generated[40], path[1024], *end;
    int64_t mcoins = 0, user_id = 0, transfer = 0;
    ed_store *st = NULL;
    quota_balance bal;
    int c, err;

    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': data = optarg; break;
        case 'u': username = optarg; break;
        case 'r': reason = optarg; break;
        case 'k': key = optarg; break;
        case 'm':
            mcoins = strtoll(optarg, &end, 10);
            if (*end || mcoins <= 0) {
                fprintf(stderr, "eddy admin grant: --mcoins must be a positive integer\n");
                return 2;
            }
            break;
        case 'c': {
            double coins = strtod(optarg, &end);
            if (*end || !(coins > 0) || coins > 1e12) {
                fprintf(stderr, "eddy admin grant: --coins must be a positive number\n");
                return 2;
            }
            mcoins = (int64_t)llround(coins * 1000.0);
            break;
        }
        default: return usage();
        }
    }
    if (!data || !username || !reason || mcoins <= 0 || optind != argc)
        return usage();
    if (key == NULL) {
        memcpy(generated, "cli-", 4);
        ed_random_token(generated + 4, 24);
        key = generated;
    }
    if (cmd_become_data_owner(data) != 0)
        return 1;
    snprintf(path, sizeof(path), "%s/eddy.db", data);
    if ((err = ed_store_open(&st, path)) < 0 || (err = acct_user_id(&user_id, st, username)) < 0 ||
        (err = quota_grant(&transfer, st, user_id, mcoins, reason, key, 0)) < 0 ||
        (err = quota_balance_get(&bal, st, user_id)) < 0) {
        fprintf(stderr, "eddy admin grant: %s\n", ed_error_last());
        ed_store_close(st);
        return 1;
    }
    printf("granted %" PRId64 " mcoins to %s (transfer %" PRId64 "); balance %" PRId64 " mcoins\n",
           mcoins, username, transfer, bal.coins_mcoins);
    ed_store_close(st);
    return 0;
}
