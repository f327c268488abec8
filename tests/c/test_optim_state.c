/* Optimizer state() / load_state() (optim_state.c): the name tables, R's format(), ggmlR's
 * checks in order with their texts, the earlier and model-file layouts, the hyper-parameter
 * comparison, and that a refused load writes nothing. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

static void test_tables(void)
{
    CHECK(!strcmp(pg_optim_name(PG_OPTIM_NAMES_SLOTS, PG_OPTIM_KIND_ADAM, 1), "v"));
    CHECK(!pg_optim_name(PG_OPTIM_NAMES_SLOTS, PG_OPTIM_KIND_SGD, 1));
    CHECK(!strcmp(pg_optim_name(PG_OPTIM_NAMES_HYPER, PG_OPTIM_KIND_SGD, 1), "momentum"));
    CHECK(!strcmp(pg_optim_name(PG_OPTIM_NAMES_EXTRA, PG_OPTIM_KIND_SGD, 0), "nesterov"));
    CHECK(!strcmp(pg_optim_name(PG_OPTIM_NAMES_FILE_SLOTS, PG_OPTIM_KIND_ADAM, 2), "accum"));
    CHECK(!strcmp(pg_optim_name(PG_OPTIM_NAMES_FILE_HYPER, PG_OPTIM_KIND_ADAM, 6), "average"));
    CHECK(!pg_optim_name(PG_OPTIM_NAMES_FILE_HYPER, PG_OPTIM_KIND_ADAM, 7));
    CHECK(!pg_optim_name(PG_OPTIM_NAMES_COUNT, 0, 0) && !pg_optim_name(-1, 0, 0));
    CHECK(!pg_optim_name(0, PG_OPTIM_KIND_COUNT, 0) && !pg_optim_name(0, 0, -1));
    CHECK(pg_optim_extra_default(PG_OPTIM_KIND_ADAM, 0) == 0);
    CHECK(isnan(pg_optim_extra_default(PG_OPTIM_KIND_ADAM, 1)));
    CHECK(isnan(pg_optim_extra_default(7, 0)));
    CHECK(pg_optim_is_flag("nesterov") && pg_optim_is_flag("average") && !pg_optim_is_flag("lr"));
    CHECK(!pg_optim_is_flag(NULL));
    CHECK(!strcmp(pg_optim_kind_name(PG_OPTIM_KIND_SGD), "sgd") && !pg_optim_kind_name(9));
    CHECK(!strcmp(pg_optim_state_format(), "ggmlR.ag_opt_state"));
    /* the legacy form: no type, a kind and a list of params (hosts pass a null as absent) */
    CHECK(pg_optim_state_form_of(0, 1, 1) == PG_OPTIM_STATE_FORM_LEGACY);
    CHECK(pg_optim_state_form_of(1, 1, 1) == PG_OPTIM_STATE_FORM_GGMLR);
    CHECK(pg_optim_state_form_of(0, 0, 1) == PG_OPTIM_STATE_FORM_GGMLR);
    CHECK(pg_optim_state_form_of(0, 1, 0) == PG_OPTIM_STATE_FORM_GGMLR);
}

/* R 4.2's format() of each value */
static void test_format_r(void)
{
    static const struct {
        double v;
        const char *r;
    } cases[] = {{0.01, "0.01"},
                 {1e-8, "1e-08"},
                 {1e-6, "1e-06"},
                 {0.5, "0.5"},
                 {1e5, "1e+05"},
                 {123456, "123456"},
                 {0.1 + 0.2, "0.3"},
                 {1.0 / 3, "0.3333333"},
                 {-1.5, "-1.5"},
                 {1234567.1, "1234567"},
                 {0.999, "0.999"},
                 {1e-300, "1e-300"},
                 {1e15, "1e+15"},
                 {100, "100"},
                 {0, "0"},
                 {-0.0, "0"},
                 {NAN, "NaN"},
                 {INFINITY, "Inf"},
                 {-INFINITY, "-Inf"},
                 {2.5e-5, "2.5e-05"},
                 {99, "99"},
                 {34558419206.4786, "34558419206"},
                 {-13865532.509, "-13865533"}};
    char buf[64];
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        int ok = !strcmp(pg_format_r(buf, sizeof buf, cases[k].v), cases[k].r);
        if (!ok) fprintf(stderr, "pg_format_r(%.17g) = %s, R: %s\n", cases[k].v, buf, cases[k].r);
        CHECK(ok);
    }
    CHECK(pg_format_r(NULL, 8, 1) == NULL);
    /* 15 digits: R's as.character() (a factor's levels), values checked against R 4.2 */
    const struct {
        double v;
        const char *r;
    } lv[] = {{1, "1"},
              {1e5, "1e+05"},
              {0.1 + 0.2, "0.3"},
              {123456.7, "123456.7"},
              {1e15, "1e+15"},
              {1.0 / 3, "0.333333333333333"},
              {-1e5, "-1e+05"},
              {123456789012345.6, "123456789012346"},
              {0.100000001490116, "0.100000001490116"}};
    for (size_t k = 0; k < sizeof lv / sizeof lv[0]; k++)
        CHECK(!strcmp(pg_format_r_digits(buf, sizeof buf, lv[k].v, 15), lv[k].r));
    CHECK(pg_format_r(buf, 0, 1) == buf);
    CHECK(!strcmp(pg_format_r(buf, 3, 0.125), "0."));
}

static const int64_t D22[2] = {2, 2}, D12[2] = {1, 2}, D11[2] = {1, 1}, D3[1] = {3};

static pg_host_value num(double v) { return (pg_host_value){PG_HOST_NUM, v, NULL}; }
static pg_host_value integer(double v) { return (pg_host_value){PG_HOST_INT, v, NULL}; }
static pg_host_value text(const char *s) { return (pg_host_value){PG_HOST_TEXT, 0, s}; }

/* a good ggmlR state of an Adam optimizer over a 2x2 and a 1x2 parameter */
typedef struct {
    pg_optim_state_in in;
    pg_host_matrix m[4];
    double v[4][4];
    const char *names[2];
} st_fixture;

static void ggmlr_state(st_fixture *f)
{
    f->in = pg_optim_state_in_default();
    f->in.is_map = 1;
    f->in.format = text("ggmlR.ag_opt_state");
    f->in.version = integer(1);
    f->in.type = text("adam");
    f->in.t = integer(3);
    f->in.accum_count = num(0);
    f->in.slot_len[0] = f->in.slot_len[1] = 2;
    f->names[0] = "W";
    f->names[1] = "b";
    f->in.names_given = 1;
    f->in.names = f->names;
    f->in.n_names = 2;
    f->in.opt_names = f->names;
    f->in.n_opt_names = 2;
    for (int j = 0; j < 4; j++) {
        for (int e = 0; e < 4; e++) f->v[j][e] = 0.25 * (j + 1) + e;
        f->m[j] = (pg_host_matrix){1, 1, 2, j % 2 ? D12 : D22, f->v[j]};
    }
    f->in.slots = f->m;
    f->in.n_slots = 4;
}

static void refused(pg_optim *o, const pg_optim_state_in *in, int status, const char *msg)
{
    pg_clear_error();
    CHECK(pg_optim_state_load(o, in, 0) == status);
    int ok = strstr(pg_last_error(), msg) != NULL;
    if (!ok) fprintf(stderr, "expected '%s', got '%s'\n", msg, pg_last_error());
    CHECK(ok);
    pg_clear_error();
}

#define V(msg) "optimizer load_state(): " msg

static void test_ggmlr_checks(pg_optim *o, pg_optim *sgd)
{
    st_fixture f;
    ggmlr_state(&f);
    refused(NULL, &f.in, PG_STATUS_ERR_ARG, "NULL optimizer");
    refused(o, NULL, PG_STATUS_ERR_ARG, "NULL optimizer");
    f.in.form = 9;
    refused(o, &f.in, PG_STATUS_ERR_ARG, "unknown state form 9");
    ggmlr_state(&f);
    f.in.is_map = 0;
    refused(o, &f.in, PG_STATUS_ERR_VALUE, V("not an optimizer state (from opt$state())"));
    ggmlr_state(&f);
    f.in.format = text("x");
    refused(o, &f.in, PG_STATUS_ERR_VALUE, "not an optimizer state");
    f.in.format = num(1);
    refused(o, &f.in, PG_STATUS_ERR_VALUE, "not an optimizer state");
    ggmlr_state(&f);
    f.in.version = integer(99);
    refused(o, &f.in, PG_STATUS_ERR_VALUE,
            V("unsupported state version 99 (this ggmlR reads version 1)"));
    f.in.version = num(1);
    refused(o, &f.in, PG_STATUS_ERR_VALUE, "unsupported state version 1 (");
    f.in.version = (pg_host_value){PG_HOST_ABSENT, 0, NULL};
    refused(o, &f.in, PG_STATUS_ERR_VALUE, "unsupported state version NULL (");
    f.in.version = (pg_host_value){PG_HOST_BOOL, 1, NULL};
    refused(o, &f.in, PG_STATUS_ERR_VALUE, "unsupported state version TRUE (");
    f.in.version = (pg_host_value){PG_HOST_OTHER, 0, "[1, 2]"};
    refused(o, &f.in, PG_STATUS_ERR_VALUE, "unsupported state version [1, 2] (");
    f.in.version = (pg_host_value){PG_HOST_OTHER, 0, NULL};
    refused(o, &f.in, PG_STATUS_ERR_VALUE, "unsupported state version ? (");
    ggmlr_state(&f);
    refused(sgd, &f.in, PG_STATUS_ERR_VALUE,
            V("state is for a 'adam' optimizer, this one is 'sgd'"));
    f.in.type = (pg_host_value){PG_HOST_ABSENT, 0, "None"};
    refused(o, &f.in, PG_STATUS_ERR_VALUE, "state is for a 'None' optimizer, this one is 'adam'");
    ggmlr_state(&f);
    f.in.slot_len[1] = 3;
    refused(o, &f.in, PG_STATUS_ERR_VALUE, V("state has 3 parameters, optimizer has 2"));
    ggmlr_state(&f);
    f.in.names_bad = "str";
    refused(o, &f.in, PG_STATUS_ERR_VALUE,
            V("names must be NULL or one name per parameter, got str"));
    ggmlr_state(&f);
    const char *other[2] = {"a", NULL};
    f.in.names = other;
    refused(o, &f.in, PG_STATUS_ERR_VALUE,
            V("parameter names differ from the state's (position is the key, names are the "
              "check)\n  optimizer: W, b\n  state:     a, NA"));
    f.in.n_names = 1;
    refused(o, &f.in, PG_STATUS_ERR_VALUE, "optimizer: W, b\n  state:     a");
    f.in.names = NULL;
    refused(o, &f.in, PG_STATUS_ERR_ARG, "names without their values");
    ggmlr_state(&f);
    f.in.n_slots = 3;
    refused(o, &f.in, PG_STATUS_ERR_ARG, V("3 slot values for 2 parameters"));
    f.in.n_slots = 4;
    f.in.slots = NULL;
    refused(o, &f.in, PG_STATUS_ERR_ARG, "4 slot values for 2 parameters");
    ggmlr_state(&f);
    f.m[0].dims = D11;
    refused(o, &f.in, PG_STATUS_ERR_VALUE,
            V("slot 'm' of parameter 1 has shape 1x1, expected 2x2"));
    ggmlr_state(&f);
    f.m[3].present = 0;
    refused(o, &f.in, PG_STATUS_ERR_VALUE, "slot 'v' of parameter 2 has shape , expected 1x2");
    ggmlr_state(&f);
    f.m[1] = (pg_host_matrix){1, 1, 1, D3, NULL};
    refused(o, &f.in, PG_STATUS_ERR_VALUE, "slot 'm' of parameter 2 has shape 3, expected 1x2");
    f.m[1] = (pg_host_matrix){1, 0, 2, D12, NULL};
    refused(o, &f.in, PG_STATUS_ERR_VALUE, "slot 'm' of parameter 2 has shape 1x2, expected");
    f.m[1] = (pg_host_matrix){1, 1, 2, D12, NULL};
    refused(o, &f.in, PG_STATUS_ERR_ARG, "slot values without data");
    ggmlr_state(&f);
    f.v[3][1] = NAN;
    refused(o, &f.in, PG_STATUS_ERR_VALUE, V("slot 'v' of parameter 2 is not finite"));
    ggmlr_state(&f);
    f.in.t = num(-1);
    refused(o, &f.in, PG_STATUS_ERR_VALUE, V("t / accum_count are not counts"));
    f.in.t = num(1.5);
    refused(o, &f.in, PG_STATUS_ERR_VALUE, "t / accum_count are not counts");
    f.in.t = (pg_host_value){PG_HOST_BOOL, 1, NULL};
    refused(o, &f.in, PG_STATUS_ERR_VALUE, "t / accum_count are not counts");
    f.in.t = num(INFINITY);
    refused(o, &f.in, PG_STATUS_ERR_VALUE, "t / accum_count are not counts");
    ggmlr_state(&f);
    f.in.accum_count = (pg_host_value){PG_HOST_ABSENT, 0, NULL};
    refused(o, &f.in, PG_STATUS_ERR_VALUE, "t / accum_count are not counts");
    /* the write's own checks (pg_optim_load) come after the host's warning */
    ggmlr_state(&f);
    f.v[3][0] = -1;
    CHECK(pg_optim_state_load(o, &f.in, 1) == 0);
    refused(o, &f.in, PG_STATUS_ERR_VALUE, "negative entry");
    f.in.t = num(1e16);
    CHECK(pg_optim_state_load(o, &f.in, 1) == 0);
    f.v[3][0] = 0;
    refused(o, &f.in, PG_STATUS_ERR_VALUE, "t / accum_count are not counts");
    CHECK(pg_optim_state(o, 0, 0) == NULL && pg_optim_get(o, "t") == 0); /* nothing written */
    /* accepted: written; an unnamed optimizer or state skips the names check */
    ggmlr_state(&f);
    f.in.opt_names = NULL;
    f.names[0] = "zz";
    CHECK(pg_optim_state_load(o, &f.in, 0) == 0);
    CHECK(pg_optim_get(o, "t") == 3 && pg_optim_get(o, "accum_count") == 0);
    double back[4];
    CHECK(pg_tensor_read(pg_optim_state(o, 1, 1), back, PG_DTYPE_F64) == 0);
    CHECK(back[0] == f.v[3][0] && back[1] == f.v[3][1]);
    CHECK(pg_tensor_read(pg_optim_state(o, 0, 0), back, PG_DTYPE_F64) == 0 && back[3] == f.v[0][3]);
}

static void test_legacy_and_file(pg_optim *o)
{
    double m0[4] = {1, 2, 3, 4}, v0[4] = {1, 1, 1, 1}, m1[2] = {5, 6}, bad[2] = {1, NAN};
    pg_host_matrix s[6] = {{1, 1, 2, D22, m0}, {1, 1, 2, D22, v0},    {0, 0, 0, NULL, NULL},
                           {1, 1, 2, D12, m1}, {0, 0, 0, NULL, NULL}, {0, 0, 0, NULL, NULL}};
    pg_optim_state_in in = pg_optim_state_in_default();
    in.form = PG_OPTIM_STATE_FORM_LEGACY;
    in.is_map = 1;
    in.format = text("ggmlR.ag_opt_state");
    in.type = text("sgd");
    in.slot_len[0] = 2;
    in.slots = s;
    in.n_slots = 6;
    refused(o, &in, PG_STATUS_ERR_VALUE, V("state is for a 'sgd' optimizer, this one is 'adam'"));
    in.type = text("adam");
    in.slot_len[0] = 1;
    refused(o, &in, PG_STATUS_ERR_VALUE, V("state has 1 parameters, optimizer has 2"));
    in.slot_len[0] = 2;
    in.n_slots = 5;
    refused(o, &in, PG_STATUS_ERR_ARG, "5 slot values for 2 parameters");
    in.n_slots = 6;
    s[3].dims = D22;
    refused(o, &in, PG_STATUS_ERR_VALUE, V("slot 'm' of parameter 2 has shape 2x2, expected 1x2"));
    s[3].dims = D12;
    in.t = num(-2);
    refused(o, &in, PG_STATUS_ERR_VALUE, V("t / accum_count are not counts"));
    in.t = (pg_host_value){PG_HOST_ABSENT, 0, NULL}; /* absent counters read 0 */
    s[3].data = bad;
    refused(o, &in, PG_STATUS_ERR_VALUE, "optimizer state: slot 'm' of parameter 2 is not finite");
    s[3].data = m1;
    CHECK(pg_optim_state_load(o, &in, 1) == 0);
    in.format = text("nope");
    refused(o, &in, PG_STATUS_ERR_VALUE, "not an optimizer state");
    in.format = text("ggmlR.ag_opt_state");
    in.t = integer(7);
    CHECK(pg_optim_state_load(o, &in, 0) == 0 && pg_optim_get(o, "t") == 7);
    CHECK(pg_optim_state(o, 1, 1) == NULL); /* an absent slot is emptied */
    /* a model file's: the format and type are the reader's business */
    in.form = PG_OPTIM_STATE_FORM_FILE;
    in.is_map = 0;
    in.type = text("whatever");
    in.t = integer(9);
    CHECK(pg_optim_state_load(o, &in, 1) == 0 && pg_optim_get(o, "t") == 7);
    s[0].numeric = 0;
    refused(o, &in, PG_STATUS_ERR_VALUE, "slot value 1 is not a double matrix");
    s[0].numeric = 1;
    in.n_slots = 2;
    refused(o, &in, PG_STATUS_ERR_ARG, "2 slot values for 2 parameters");
    in.n_slots = 6;
    in.accum_count = num(0.5);
    refused(o, &in, PG_STATUS_ERR_VALUE, "t / accum_count are not counts");
    in.accum_count = num(0);
    CHECK(pg_optim_state_load(o, &in, 0) == 0 && pg_optim_get(o, "t") == 9);
}

static void test_hyper(pg_optim *o, pg_optim *sgd)
{
    pg_optim_hyper_diff d;
    pg_optim_state_in in = pg_optim_state_in_default();
    CHECK_ERR(pg_optim_hyper_diff_of(NULL, &in, &d) != 0, PG_STATUS_ERR_ARG, "NULL argument");
    CHECK_ERR(pg_optim_hyper_diff_of(o, NULL, &d) != 0, PG_STATUS_ERR_ARG, "NULL argument");
    CHECK_ERR(pg_optim_hyper_diff_of(o, &in, NULL) != 0, PG_STATUS_ERR_ARG, "NULL argument");
    in.n_hyper = 2;
    CHECK_ERR(pg_optim_hyper_diff_of(o, &in, &d) != 0, PG_STATUS_ERR_ARG, "without values");
    in.n_hyper = -1;
    CHECK_ERR(pg_optim_hyper_diff_of(o, &in, &d) != 0, PG_STATUS_ERR_ARG, "without values");
    /* nothing given: only the extras, at their default on both sides */
    in.n_hyper = 0;
    CHECK(pg_optim_hyper_diff_of(o, &in, &d) == 0 && d.n == 0 && d.message[0] == 0);
    pg_optim_set(o, "lr", 0.5);
    pg_optim_set(o, "eps", 1e-6);
    const char *names[6] = {"lr", "eps", "beta1", "beta2", "unknown", "weight_decay"};
    pg_host_value vals[6] = {num(0.01),  num(1e-8), num(0.9 + 1e-10),
                             integer(1), text("x"), {PG_HOST_ABSENT, 0, NULL}};
    in.hyper_names = names;
    in.hyper = vals;
    in.n_hyper = 6;
    CHECK(pg_optim_hyper_diff_of(o, &in, &d) == 0 && d.n == 3);
    CHECK(!strcmp(d.message,
                  V("hyperparameters differ from the state's and are NOT restored: "
                    "lr = 0.5 (state 0.01), beta2 = 0.999 (state 1), eps = 1e-06 "
                    "(state 1e-08)")));
    CHECK(!strcmp(d.name[0], "lr") && d.entry[0] == 0 && d.entry[1] == 3 && d.entry[2] == 1);
    pg_optim_set(o, "weight_decay", 0.1); /* the extra against its absent entry's default */
    vals[0] = text("fast");
    CHECK(pg_optim_hyper_diff_of(o, &in, &d) == 0 && d.n == 4);
    CHECK(strstr(d.message, "lr = 0.5 (state fast), ") != NULL);
    CHECK(strstr(d.message, ", weight_decay = 0.1 (state 0)") != NULL);
    CHECK(d.entry[3] == -1 && d.default_value[3] == 0 && !d.is_flag[3]);
    /* flags: a number is no flag; the state's TRUE against FALSE */
    const char *sn[3] = {"nesterov", "momentum", "lr"};
    pg_host_value sv[3] = {num(0), num(1e-20), (pg_host_value){PG_HOST_BOOL, 1, NULL}};
    in.hyper_names = sn;
    in.hyper = sv;
    in.n_hyper = 3;
    CHECK(pg_optim_hyper_diff_of(sgd, &in, &d) == 0 && d.n == 2); /* momentum 0 vs 1e-20: equal */
    CHECK(!strcmp(d.message,
                  V("hyperparameters differ from the state's and are NOT restored: "
                    "lr = 0.01 (state TRUE), nesterov = FALSE (state 0)")));
    CHECK(d.is_flag[1] && d.entry[1] == 0);
    sv[0] = (pg_host_value){PG_HOST_BOOL, 0, NULL};
    sv[2] = num(NAN);
    CHECK(pg_optim_hyper_diff_of(sgd, &in, &d) == 0 && d.n == 1 && strstr(d.message, "nan"));
    sv[2] = num(0.01 * (1 + 1e-9)); /* R's all.equal: within 1.5e-8, relative */
    CHECK(pg_optim_hyper_diff_of(sgd, &in, &d) == 0 && d.n == 0);
    pg_optim_set(sgd, "nesterov", 1);
    sv[0] = num(1);
    CHECK(pg_optim_hyper_diff_of(sgd, &in, &d) == 0 && d.n == 1 && d.is_flag[0]);
    CHECK(strstr(d.message, "nesterov = TRUE (state 1)") != NULL);
    pg_optim_set(sgd, "nesterov", 0);
    pg_optim_set(o, "lr", 1e-3);
    pg_optim_set(o, "eps", 1e-8);
    pg_optim_set(o, "weight_decay", 0);
}

static void test_state_side(pg_optim *o, pg_optim *sgd)
{
    pg_optim_state_out s;
    CHECK_ERR(pg_optim_state_of(NULL, &s) != 0, PG_STATUS_ERR_ARG, "NULL argument");
    CHECK_ERR(pg_optim_state_of(o, NULL) != 0, PG_STATUS_ERR_ARG, "NULL argument");
    pg_optim_set(o, "t", 5);
    CHECK(pg_optim_state_of(o, &s) == 0 && s.n_hyper == 4 && !strcmp(s.hyper_name[3], "eps"));
    CHECK(s.hyper_value[3] == 1e-8 && !s.hyper_is_flag[3] && s.t == 5 && s.version == 1);
    CHECK(!strcmp(s.format, "ggmlR.ag_opt_state") && !strcmp(s.type, "adam"));
    CHECK(s.n_slots == 2 && !strcmp(s.slot[1], "v") && !s.has_note && s.note[0] == 0);
    pg_optim_set(o, "t", 0);
    pg_optim_set(sgd, "t", 3); /* ggmlR stores t = 0 for SGD */
    pg_optim_set(sgd, "weight_decay", 0.25);
    CHECK(pg_optim_state_of(sgd, &s) == 0 && s.n_hyper == 3 && s.t == 0);
    CHECK(!strcmp(s.hyper_name[2], "weight_decay") && s.hyper_value[2] == 0.25);
    CHECK(s.n_slots == 1 && !strcmp(s.slot[0], "velocity") && !strcmp(s.type, "sgd"));
    pg_optim_set(sgd, "nesterov", 1);
    CHECK(pg_optim_state_of(sgd, &s) == 0 && s.n_hyper == 4 &&
          !strcmp(s.hyper_name[2], "nesterov"));
    CHECK(s.hyper_value[2] == 1 && s.hyper_is_flag[2]);
    pg_optim_set(sgd, "accumulate_steps", 4);
    pg_optim_set(sgd, "accum_count", 1);
    CHECK(pg_optim_state_of(sgd, &s) == 0 && s.has_note && s.accum_count == 1);
    CHECK(!strcmp(s.note,
                  "optimizer state(): taken mid-accumulation (1 of 4 backward passes); the "
                  "accumulated gradients live in the parameters' $grad and are not part of "
                  "the state"));
    pg_optim_set(sgd, "t", 0);
}

/* pg_optim_state_check: the checks, then the comparison; a refusal leaves diff as it was and
 * writes nothing */
static void test_state_check(pg_optim *o)
{
    st_fixture f;
    ggmlr_state(&f);
    pg_optim_hyper_diff d;
    pg_host_value lr = num(0.5);
    const char *hn[1] = {"lr"};
    f.in.hyper_names = hn, f.in.hyper = &lr, f.in.n_hyper = 1;
    CHECK_ERR(pg_optim_state_check(o, &f.in, NULL) != 0, PG_STATUS_ERR_ARG, "NULL argument");
    CHECK_ERR(pg_optim_state_check(NULL, &f.in, &d) != 0, PG_STATUS_ERR_ARG, "NULL optimizer");
    CHECK(pg_optim_state_check(o, &f.in, &d) == 0 && d.n == 1 && !strcmp(d.name[0], "lr"));
    CHECK(strstr(d.message, "lr = 0.001 (state 0.5)") != NULL);
    CHECK(pg_optim_get(o, "t") == 0); /* checked, not written */
    d.n = 42;
    f.in.version = integer(2);
    CHECK_ERR(pg_optim_state_check(o, &f.in, &d) != 0, PG_STATUS_ERR_VALUE,
              V("unsupported state version 2 (this ggmlR reads version 1)"));
    CHECK(d.n == 42 && pg_optim_get(o, "t") == 0);
    f.in.version = integer(1);
    f.in.hyper = NULL; /* the comparison's refusal */
    CHECK_ERR(pg_optim_state_check(o, &f.in, &d) != 0, PG_STATUS_ERR_ARG, "without values");
    CHECK(d.n == 42 && pg_optim_get(o, "t") == 0);
}

/* ag_fit's opt_params (pg_fit_opt_params): aliases, the kind's names, values, all or nothing */
static void test_opt_params(pg_optim *o)
{
    double lr = pg_optim_get(o, "lr"), wd = pg_optim_get(o, "weight_decay");
    const char *nm[2] = {"alpha", "wd"};
    pg_host_value v[2] = {{PG_HOST_NUM, 0.5, "0.5"}, {PG_HOST_INT, 2, "2"}};
    CHECK(pg_fit_opt_params(o, 2, nm, v, 1) == 0);
    CHECK(pg_optim_get(o, "lr") == 0.5 && pg_optim_get(o, "weight_decay") == 2);
    v[1].num = -1; /* refused as it is set: lr is put back */
    v[0].num = 0.25;
    CHECK(pg_fit_opt_params(o, 2, nm, v, 3) == PG_STATUS_ERR_VALUE);
    CHECK(strstr(pg_last_error(), "ag_fit: opt_params at epoch 3: optimizer_adam: weight_decay") ==
          pg_last_error());
    CHECK(pg_optim_get(o, "lr") == 0.5 && pg_optim_get(o, "weight_decay") == 2);
    const char *bad[3] = {"t", "momentum", "nesterov"};
    for (int i = 0; i < 3; i++) {
        CHECK(pg_fit_opt_params(o, 1, &bad[i], v, 1) == PG_STATUS_ERR_VALUE);
        CHECK(strstr(pg_last_error(), "unknown hyper-parameter") != NULL);
    }
    pg_host_value flag = {PG_HOST_BOOL, 1, "TRUE"}, text = {PG_HOST_TEXT, 0, "a"};
    CHECK(pg_fit_opt_params(o, 1, nm, &flag, 2) == PG_STATUS_ERR_ARG);
    CHECK(!strcmp(pg_last_error(),
                  "ag_fit: opt_params returned 'alpha' = TRUE at epoch 2; it must be one number"));
    CHECK(pg_fit_opt_params(o, 1, nm, &text, 2) == PG_STATUS_ERR_ARG);
    CHECK(pg_fit_opt_params(o, 65, nm, v, 2) == PG_STATUS_ERR_VALUE);
    pg_clear_error();
    pg_optim_set(o, "lr", lr);
    pg_optim_set(o, "weight_decay", wd);
}

void test_optim_state(void)
{
    test_tables();
    test_format_r();
    for (int dt = PG_DTYPE_F32; dt <= PG_DTYPE_F64; dt++) {
        pg_tensor *p = rnd(dt, 2, 2, 0), *q = rnd(dt, 1, 2, 0);
        pg_tensor *ps[2] = {p, q};
        pg_optim *o = pg_optim_new(PG_OPTIM_KIND_ADAM, ps, 2, NULL);
        pg_optim *sgd = pg_optim_new(PG_OPTIM_KIND_SGD, ps, 2, NULL);
        CHECK(o && sgd);
        test_ggmlr_checks(o, sgd);
        test_legacy_and_file(o);
        test_hyper(o, sgd);
        test_state_side(o, sgd);
        test_state_check(o);
        test_opt_params(o);
        pg_optim_free(o);
        pg_optim_free(sgd);
        REL(p);
        REL(q);
    }
}
