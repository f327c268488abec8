/* summary(model)'s output shapes and table (native/layer_shape.c): each built-in layer's rule
 * by hand (torch's output sizes), unknowns, and the table R printed before the core did. */
#include <string.h>
#include "check.h"
#include "codec_internal.h"

static int64_t st[PG_SHAPE_STATE];

/* state (rows, C, H, W) after config text */
static void set(int64_t r, int64_t c, int64_t h, int64_t w)
{
    st[0] = r, st[1] = c, st[2] = h, st[3] = w;
}
static int shape(const char *text) { return pg_layer_shape(text, (int64_t)strlen(text), st); }
static int is(int64_t r, int64_t c, int64_t h, int64_t w)
{
    return st[0] == r && st[1] == c && st[2] == h && st[3] == w;
}
static int label_is(const char *want)
{
    char b[80];
    return pg_layer_shape_label(st, b, sizeof b) == (int64_t)strlen(want) && !strcmp(b, want);
}

static void test_rules(void)
{
    /* every built-in type has a rule */
    for (int i = 1; pg_layer_type_name(i); i++) CHECK(pg_layer_shape_known(pg_layer_type_name(i)));
    /* R's image test (r/tests/testthat/test-resize.R), layer by layer */
    set(-1, -1, -1, -1);
    CHECK(!shape("{\"type\": \"conv2d\", \"in_channels\": 1, \"out_channels\": 16, "
                 "\"kernel_size\": 3, \"padding\": 1, \"input_shape\": [1, 8, 8]}"));
    CHECK(is(1024, 16, 8, 8) && label_is("[1024 x batch] (16, 8, 8)"));
    CHECK(!shape("{\"type\": \"max_pool2d\", \"kernel_size\": 2}") && is(256, 16, 4, 4));
    CHECK(!shape("{\"type\": \"pad2d\", \"padding\": [0, 1, 1, 0]}") && is(400, 16, 5, 5));
    CHECK(!shape("{\"type\": \"upsample2d\", \"scale_factor\": 2}") && is(1600, 16, 10, 10));
    CHECK(!shape("{\"type\": \"conv2d\", \"in_channels\": 16, \"out_channels\": 4, "
                 "\"kernel_size\": [3, 3], \"stride\": 2, \"dilation\": [2, 2]}"));
    CHECK(is(36, 4, 3, 3));
    CHECK(!shape("{\"type\": \"avg_pool2d\", \"kernel_size\": 2, \"padding\": 1}"));
    CHECK(is(16, 4, 2, 2));
    CHECK(!shape("{\"type\": \"batch_norm\", \"num_features\": 16}") && is(16, 4, 2, 2));
    CHECK(!shape("{\"type\": \"flatten\"}") && is(16, -1, -1, -1) && label_is("[16 x batch]"));
    CHECK(!shape("{\"type\": \"linear\", \"in_features\": 16, \"out_features\": 10}"));
    CHECK(is(10, -1, -1, -1));
    /* 1-D: (C, L) is (C, 1, L); pools, pads and upsampling change L alone */
    CHECK(!shape("{\"type\": \"conv1d\", \"in_channels\": 3, \"out_channels\": 8, "
                 "\"kernel_size\": 5, \"input_shape\": [3, 32]}") &&
          is(224, 8, 1, 28));
    CHECK(!shape("{\"type\": \"max_pool1d\", \"kernel_size\": 2, \"padding\": 1}"));
    CHECK(is(120, 8, 1, 15));
    CHECK(!shape("{\"type\": \"pad1d\", \"padding\": [1, 2]}") && is(144, 8, 1, 18));
    CHECK(!shape("{\"type\": \"pad1d\", \"padding\": 3}") && is(192, 8, 1, 24));
    CHECK(!shape("{\"type\": \"upsample1d\", \"scale_factor\": 3}") && is(576, 8, 1, 72));
    CHECK(!shape("{\"type\": \"avg_pool1d\", \"kernel_size\": 4, \"stride\": 2}"));
    CHECK(is(280, 8, 1, 35)); /* (72 - 4) / 2 + 1 */
    CHECK(!shape("{\"type\": \"global_max_pool\"}") && is(8, -1, -1, -1));
    /* a 1-D layer on an image with H > 1: unknown (the op refuses it) */
    set(48, 3, 4, 4);
    CHECK(!shape("{\"type\": \"max_pool1d\", \"kernel_size\": 2}") && is(-1, -1, -1, -1));
    CHECK(label_is("?"));
    /* "same" and "valid"; the transposed convolution (torch: (n-1)s - 2p + d(k-1) + op + 1) */
    set(25, 1, 5, 5);
    CHECK(!shape("{\"type\": \"conv2d\", \"in_channels\": 1, \"out_channels\": 2, "
                 "\"kernel_size\": 3, \"padding\": \"same\"}") &&
          is(50, 2, 5, 5));
    CHECK(!shape("{\"type\": \"conv2d\", \"in_channels\": 2, \"out_channels\": 2, "
                 "\"kernel_size\": [3, 2], \"padding\": \"valid\"}") &&
          is(24, 2, 3, 4));
    set(32, 2, 4, 4);
    CHECK(!shape("{\"type\": \"conv_transpose2d\", \"in_channels\": 2, \"out_channels\": 3, "
                 "\"kernel_size\": 3, \"stride\": 2, \"padding\": 1, \"output_padding\": 1}"));
    CHECK(is(192, 3, 8, 8));
    set(-1, -1, -1, -1);
    CHECK(!shape("{\"type\": \"conv_transpose2d\", \"in_channels\": 2, \"out_channels\": 1, "
                 "\"kernel_size\": [2, 3], \"dilation\": [1, 2], \"input_shape\": [2, 3, 3]}"));
    CHECK(is(28, 1, 4, 7));
    /* the 1-D transposed convolution: W alone */
    set(30, 3, 1, 10);
    CHECK(!shape("{\"type\": \"conv_transpose1d\", \"in_channels\": 3, \"out_channels\": 4, "
                 "\"kernel_size\": 3, \"stride\": 2, \"output_padding\": 1}"));
    CHECK(is(88, 4, 1, 22));
    /* negative pads crop; a crop to nothing is unknown */
    CHECK(!shape("{\"type\": \"pad1d\", \"padding\": [-2, 1]}") && is(84, 4, 1, 21));
    CHECK(!shape("{\"type\": \"pad2d\", \"padding\": [1, -1, -1, 0]}") && is(-1, -1, -1, -1));
    set(-1, -1, -1, -1);
    CHECK(!shape("{\"type\": \"conv_transpose2d\", \"in_channels\": 2, \"out_channels\": 1, "
                 "\"kernel_size\": [2, 3], \"dilation\": [1, 2], \"input_shape\": [2, 3, 3]}"));
    /* pad2d's pair is (H, W): top and bottom H, left and right W */
    CHECK(!shape("{\"type\": \"pad2d\", \"padding\": [1, 2]}") && is(66, 1, 6, 11));
    /* a convolution with no image and no input_shape, a kernel larger than the input */
    set(36, -1, -1, -1);
    CHECK(!shape("{\"type\": \"conv2d\", \"in_channels\": 1, \"out_channels\": 4, "
                 "\"kernel_size\": 3}") &&
          is(-1, -1, -1, -1));
    set(4, 1, 2, 2);
    CHECK(!shape("{\"type\": \"max_pool2d\", \"kernel_size\": 3}") && is(-1, -1, -1, -1));
    /* recurrent: [input_size * T, batch] -> hidden (x2 bidirectional), per step on request */
    set(12, -1, -1, -1);
    CHECK(!shape("{\"type\": \"lstm\", \"input_size\": 3, \"hidden_size\": 5, "
                 "\"bidirectional\": true, \"return_sequences\": true}") &&
          is(40, -1, -1, -1));
    CHECK(!shape("{\"type\": \"gru\", \"input_size\": 8, \"hidden_size\": 4}") &&
          is(4, -1, -1, -1));
    set(-1, -1, -1, -1);
    CHECK(!shape("{\"type\": \"rnn\", \"input_size\": 3, \"hidden_size\": 5, "
                 "\"return_sequences\": true}") &&
          is(-1, -1, -1, -1));
    CHECK(!shape("{\"type\": \"rnn\", \"input_size\": 3, \"hidden_size\": 5, "
                 "\"return_state\": true}") &&
          is(5, -1, -1, -1));
    CHECK(!shape("{\"type\": \"embedding\", \"vocab_size\": 10, \"dim\": 4}") && is(4, -1, -1, -1));
    CHECK(!shape("{\"type\": \"multihead_attention\", \"d_model\": 8, \"n_heads\": 2}"));
    CHECK(is(8, -1, -1, -1));
    /* dropout keeps what it gets, unknown included; norms name their rows */
    CHECK(!shape("{\"type\": \"dropout\", \"rate\": 0.5}") && is(8, -1, -1, -1));
    set(-1, -1, -1, -1);
    CHECK(!shape("{\"type\": \"dropout\", \"rate\": 0.5}") && is(-1, -1, -1, -1));
    CHECK(!shape("{\"type\": \"layer_norm\", \"normalized_shape\": 6}") && is(6, -1, -1, -1));
    CHECK(!shape("{\"type\": \"normalization\", \"features\": 7}") && is(7, -1, -1, -1));
    /* custom types, refused arguments, text that is no config: unknown, never an error */
    set(5, -1, -1, -1);
    CHECK(!shape("{\"type\": \"my_layer\", \"k\": 1}") && is(-1, -1, -1, -1));
    set(5, -1, -1, -1);
    CHECK(!shape("{\"type\": \"linear\", \"in_features\": 4, \"out_features\": 0}"));
    CHECK(is(-1, -1, -1, -1));
    set(5, -1, -1, -1);
    CHECK(!shape("not json") && is(-1, -1, -1, -1));
    /* an input image that does not span the rows is dropped */
    set(10, 1, 2, 2);
    CHECK(!shape("{\"type\": \"dropout\", \"rate\": 0}") && is(10, -1, -1, -1));
    /* sequentials walk their layers, nested ones too */
    set(-1, -1, -1, -1);
    CHECK(!shape("{\"type\": \"sequential\", \"layers\": [{\"type\": \"conv1d\", "
                 "\"in_channels\": 2, \"out_channels\": 4, \"kernel_size\": 3, "
                 "\"input_shape\": [2, 10]}, {\"type\": \"sequential\", \"layers\": "
                 "[{\"type\": \"global_avg_pool\"}]}, {\"type\": \"linear\", "
                 "\"in_features\": 4, \"out_features\": 2}]}") &&
          is(2, -1, -1, -1));
    CHECK(pg_layer_shape(NULL, 0, st) == PG_STATUS_ERR_ARG);
    pg_clear_error();
}

static void test_table(void)
{
    const char *layer[] = {"linear(4, 8, relu)", "dropout(0.1)", "batch_norm(8)", "linear(8, 3)"};
    const char *type[] = {"ag_linear", "ag_dropout", "ag_batch_norm", "ag_linear"};
    const char *shp[] = {"[8 x batch]", "[8 x batch]", "[8 x batch]", "[3 x batch]"};
    const double params[] = {40, 0, 16, 27};
    const char *want = "ag_sequential (4 layers, train mode)\n"
                       "_______________________________________________________\n"
                       "Layer (type)                      Output shape  Param #\n"
                       "=======================================================\n"
                       "1 linear(4, 8, relu) (ag_linear)  [8 x batch]        40\n"
                       "2 dropout(0.1) (ag_dropout)       [8 x batch]         0\n"
                       "3 batch_norm(8) (ag_batch_norm)   [8 x batch]        16\n"
                       "4 linear(8, 3) (ag_linear)        [3 x batch]        27\n"
                       "=======================================================\n"
                       "Total params: 99\n"
                       "Trainable params: 83\n"
                       "Non-trainable params: 16\n";
    const char *title = "ag_sequential (4 layers, train mode)";
    int64_t n = pg_summary_text(title, 4, layer, type, shp, params, 83, 16, NULL, 0);
    CHECK(n == (int64_t)strlen(want));
    char b[1024];
    CHECK(pg_summary_text(title, 4, layer, type, shp, params, 83, 16, b, sizeof b) == n);
    CHECK(!strcmp(b, want));
    /* a short buffer: cut, NUL-terminated, the whole length returned */
    CHECK(pg_summary_text(title, 4, layer, type, shp, params, 83, 16, b, 10) == n);
    CHECK(strlen(b) == 9);
    /* thousands separators; widths in UTF-8 characters */
    const char *l2[] = {"d\xc3\xa9j\xc3\xa0"};
    const char *t2[] = {"big"};
    const char *s2[] = {"?"};
    const double p2[] = {1234567};
    CHECK(pg_summary_text("m", 1, l2, t2, s2, p2, 1234567, 1000, b, sizeof b) > 0);
    CHECK(strstr(b, "1 d\xc3\xa9j\xc3\xa0 (big)  ?             1,234,567\n") != NULL);
    CHECK(strstr(b, "Total params: 1,235,567\n") != NULL);
    CHECK(strstr(b, "\n_____________________________________\n") != NULL);
    CHECK_ERR(pg_summary_text("m", 1, l2, t2, NULL, p2, 0, 0, b, sizeof b) < 0, PG_STATUS_ERR_ARG,
              "pg_summary_text");
}

/* a layer printed alone: "ag_<kind>: <name> (<n> parameters, <mode> mode)", any length */
static void test_print_text(void)
{
    char b[128];
    const char *want = "ag_gru: gru(1, 32) (3360 parameters, train mode)";
    CHECK(pg_layer_print_text("gru", "gru(1, 32)", 3360, 1, NULL, 0) == (int64_t)strlen(want));
    CHECK(pg_layer_print_text("gru", "gru(1, 32)", 3360, 1, b, sizeof b) == (int64_t)strlen(want));
    CHECK(!strcmp(b, want));
    CHECK(pg_layer_print_text("max_pool2d", "max_pool2d(2x2)", 0, 0, b, sizeof b) > 0);
    CHECK(!strcmp(b, "ag_max_pool2d: max_pool2d(2x2) (0 parameters, eval mode)"));
    CHECK(pg_layer_print_text("lstm", "l", 1234567, 1, b, 8) == 43 && !strcmp(b, "ag_lstm"));
    CHECK_ERR(pg_layer_print_text("gru", NULL, 0, 1, b, sizeof b) < 0, PG_STATUS_ERR_ARG,
              "pg_layer_print_text");
}

/* ag_fit's input check (pg_layer_shape_check): rows a built-in layer's forward refuses are a
 * shape error naming the layer, the state left as it was; anything else is pg_layer_shape */
static int chk(int64_t index, int64_t x_rows, const char *text)
{
    return pg_layer_shape_check("ag_fit", index, x_rows, 9, "x.T", text, (int64_t)strlen(text), st);
}
static int said(const char *want)
{
    int ok = !strcmp(pg_last_error(), want);
    pg_clear_error();
    return ok;
}

static void test_check(void)
{
    const char *lin = "{\"type\": \"linear\", \"in_features\": 4, \"out_features\": 8}";
    set(5, -1, -1, -1);
    CHECK(chk(1, 5, lin) == PG_STATUS_ERR_SHAPE && is(5, -1, -1, -1) &&
          said("ag_fit: x has 5 rows but the model's first layer (linear) takes 4 inputs per "
               "sample; x is [features, n], one column per sample"));
    set(4, -1, -1, -1);
    CHECK(!chk(1, 4, lin) && is(8, -1, -1, -1)); /* the rows it takes: pg_layer_shape's state */
    set(1, -1, -1, -1);
    CHECK(chk(2, 1, "{\"type\": \"batch_norm\", \"num_features\": 1}") == 0 && is(1, -1, -1, -1));
    CHECK(chk(3, 1, "{\"type\": \"layer_norm\", \"normalized_shape\": 2}") == PG_STATUS_ERR_SHAPE &&
          said("ag_fit: the model's layer 3 (layer_norm) takes 2 inputs per sample but the "
               "layers before it give 1 (x has 1 row)"));
    const char *lstm = "{\"type\": \"lstm\", \"input_size\": 3, \"hidden_size\": 5}";
    set(6, -1, -1, -1);
    CHECK(!chk(1, 6, lstm) && is(5, -1, -1, -1)); /* two time steps */
    set(7, -1, -1, -1);
    CHECK(chk(1, 7, lstm) == PG_STATUS_ERR_SHAPE &&
          said("ag_fit: x has 7 rows but the model's first layer (lstm) takes a multiple of 3 "
               "inputs per sample (input_size 3 per time step); x is [features, n], one column "
               "per sample"));
    set(0, -1, -1, -1);
    CHECK(chk(1, 0, lstm) == PG_STATUS_ERR_SHAPE); /* 0 is a multiple, but no time step */
    pg_clear_error();
    const char *conv = "{\"type\": \"conv2d\", \"in_channels\": 3, \"out_channels\": 4, "
                       "\"kernel_size\": 3, \"input_shape\": [3, 4, 4]}";
    set(50, -1, -1, -1);
    CHECK(chk(1, 50, conv) == PG_STATUS_ERR_SHAPE &&
          said("ag_fit: x has 50 rows but the model's first layer (conv2d) takes 48 inputs per "
               "sample (input_shape C 3, H 4, W 4); x is [features, n], one column per sample"));
    set(48, -1, -1, -1);
    CHECK(!chk(1, 48, conv) && is(16, 4, 2, 2));
    /* what the check cannot know passes: unknown rows, a convolution without input_shape (its
     * input's image decides), layers whose forward takes any rows, custom types, sequentials */
    set(-1, -1, -1, -1);
    CHECK(!chk(1, 9, lin) && is(8, -1, -1, -1));
    set(50, -1, -1, -1);
    CHECK(!chk(1, 50,
               "{\"type\": \"conv2d\", \"in_channels\": 3, \"out_channels\": 4, "
               "\"kernel_size\": 1}"));
    set(7, -1, -1, -1);
    CHECK(!chk(1, 7, "{\"type\": \"dropout\", \"rate\": 0.5}") && is(7, -1, -1, -1));
    CHECK(!chk(1, 7, "{\"type\": \"embedding\", \"vocab_size\": 10, \"dim\": 4}"));
    set(7, -1, -1, -1);
    CHECK(!chk(1, 7, "{\"type\": \"mine\", \"in_features\": 4}") && is(-1, -1, -1, -1));
    set(7, -1, -1, -1);
    CHECK(!chk(1, 7,
               "{\"type\": \"sequential\", \"layers\": [{\"type\": \"linear\", "
               "\"in_features\": 4, \"out_features\": 2}]}") &&
          is(2, -1, -1, -1));
    CHECK(!chk(1, 7, "not json") && is(-1, -1, -1, -1));
    /* x's samples what the first layer takes: the row-major hint (tx NULL: none) */
    set(9, -1, -1, -1);
    CHECK(pg_layer_shape_check("ag_predict", 1, 9, 4, "t(x)", lin, (int64_t)strlen(lin), st) ==
              PG_STATUS_ERR_SHAPE &&
          said("ag_predict: x has 9 rows but the model's first layer (linear) takes 4 inputs per "
               "sample; x looks row-major (9 rows, one per sample): pyggmlr data are [features, "
               "samples] with one column per sample, so pass t(x)"));
    CHECK(pg_layer_shape_check("ag_predict", 1, 9, 4, NULL, lin, (int64_t)strlen(lin), st) ==
              PG_STATUS_ERR_SHAPE &&
          said("ag_predict: x has 9 rows but the model's first layer (linear) takes 4 inputs per "
               "sample; x is [features, n], one column per sample"));
    CHECK_ERR(pg_layer_shape_check(NULL, 1, 4, -1, NULL, lin, 3, st) == PG_STATUS_ERR_ARG,
              PG_STATUS_ERR_ARG, "pg_layer_shape_check");
    CHECK(pg_layer_shape_check("ag_fit", 0, 4, -1, NULL, lin, 3, st) == PG_STATUS_ERR_ARG);
    pg_clear_error();
}

void test_layer_shape(void)
{
    test_rules();
    test_check();
    test_table();
    test_print_text();
}
