/* ag_module_from_config's layer table (native/layer_config.c): normalized arguments with the
 * defaults filled, and every refusal with the one text both front ends raise. */
#include <string.h>
#include "check.h"

static char out[PG_LAYER_CONFIG_MAX];

/* the normalized arguments of text at the top level (custom: none registered) */
static int64_t cfg(const char *text)
{
    return pg_layer_config(text, (int64_t)strlen(text), 0, 0, out, sizeof out);
}

#define REFUSED(text, needle) CHECK_ERR(cfg(text) < 0, PG_STATUS_ERR_VALUE, needle)

void test_layer_config(void)
{
    /* defaults filled, in the table's order; sizes as integers (4.0 and 3e1 are whole) */
    CHECK(cfg("{\"type\": \"linear\", \"in_features\": 4.0, \"out_features\": 3e1}") > 0);
    CHECK(!strcmp(out,
                  "{\"in_features\": 4, \"out_features\": 30, \"activation\": null, "
                  "\"init\": \"glorot_uniform\", \"gain\": 1}"));
    CHECK(cfg("{\"type\": \"linear\", \"in_features\": 4, \"out_features\": 2, \"activation\": "
              "\"gelu\", \"init\": \"orthogonal\", \"gain\": 0.5}") == (int64_t)strlen(out));
    CHECK(!strcmp(out,
                  "{\"in_features\": 4, \"out_features\": 2, \"activation\": \"gelu\", "
                  "\"init\": \"orthogonal\", \"gain\": 0.5}"));
    CHECK(cfg("{\"type\": \"batch_norm\", \"num_features\": 8}") > 0);
    CHECK(!strcmp(out, "{\"num_features\": 8, \"eps\": 1e-05, \"momentum\": 0.1}"));
    /* layer_norm's older num_features */
    CHECK(cfg("{\"type\": \"layer_norm\", \"num_features\": 6, \"eps\": 0.0001}") > 0);
    CHECK(!strcmp(out, "{\"normalized_shape\": 6, \"eps\": 0.0001, \"elementwise_affine\": true}"));
    CHECK(cfg("{\"type\": \"multihead_attention\", \"d_model\": 8, \"n_heads\": 2, \"bias\": "
              "false}") > 0);
    CHECK(!strcmp(out, "{\"d_model\": 8, \"n_heads\": 2, \"dropout\": 0, \"bias\": false}"));
    CHECK(cfg("{\"type\": \"dropout\", \"rate\": 0.1}") > 0 && !strcmp(out, "{\"rate\": 0.1}"));
    CHECK(cfg("{\"type\": \"embedding\", \"vocab_size\": 6, \"dim\": 3}") > 0 &&
          !strcmp(out, "{\"vocab_size\": 6, \"dim\": 3}"));
    CHECK(cfg("{\"type\": \"sequential\", \"layers\": []}") == 2 && !strcmp(out, "{}"));
    /* the convolutions' init (issue 30): torch's default filled, keras' two named, others refused */
    CHECK(cfg("{\"type\": \"conv1d\", \"in_channels\": 2, \"out_channels\": 3, "
              "\"kernel_size\": 2}") > 0 &&
          strstr(out, "\"activation\": null, \"init\": \"torch\"}"));
    CHECK(cfg("{\"type\": \"conv_transpose2d\", \"in_channels\": 2, \"out_channels\": 3, "
              "\"kernel_size\": 2, \"init\": \"he_uniform\"}") > 0 &&
          strstr(out, "\"init\": \"he_uniform\"}"));
    REFUSED("{\"type\": \"conv2d\", \"in_channels\": 2, \"out_channels\": 3, \"kernel_size\": 2, "
            "\"init\": \"orthogonal\"}",
            "bad arguments for a 'conv2d' layer: init must be one of \"torch\", \"glorot_uniform\" "
            "or \"he_uniform\", got \"orthogonal\"");
    /* a convolution's pair is a number or a list of two (R had read a list of one as both) */
    REFUSED("{\"type\": \"conv2d\", \"in_channels\": 2, \"out_channels\": 3, "
            "\"kernel_size\": [3]}",
            "bad arguments for a 'conv2d' layer: kernel_size must be a whole number >= 1 or a list "
            "of two, got [3]");
    CHECK(cfg("{\"type\": \"max_pool2d\", \"kernel_size\": [3]}") > 0); /* pools: 1 or 2 */
    /* a number reads back as the same double */
    CHECK(cfg("{\"type\": \"dropout\", \"rate\": 0.30000000000000004}") > 0 &&
          !strcmp(out, "{\"rate\": 0.30000000000000004}"));
    /* a registered custom type is the front end's builder's; a built-in type ignores the flag */
    const char *custom = "{\"type\": \"scale\", \"n\": 3}";
    CHECK(pg_layer_config(custom, (int64_t)strlen(custom), 3, 1, out, sizeof out) == 0);
    CHECK(!strcmp(out, ""));
    const char *lin = "{\"type\": \"embedding\", \"vocab_size\": 2, \"dim\": 2}";
    CHECK(pg_layer_config(lin, (int64_t)strlen(lin), 0, 1, out, sizeof out) > 0);
    /* a short buffer gets a cut, terminated text; the length is the whole one's */
    char small[4];
    CHECK(pg_layer_config(lin, (int64_t)strlen(lin), 0, 0, small, sizeof small) == 27);
    CHECK(!strcmp(small, "{\"v"));

    REFUSED("{\"type\": \"conv\"}",
            "ag_module_from_config: unknown layer type 'conv' (built-in: sequential, ");
    /* the list: every built-in type, then how to add custom ones */
    cfg("{\"type\": \"conv\"}");
    CHECK(strstr(
              pg_last_error(),
              "batch_norm, conv1d, conv2d, conv_transpose1d, conv_transpose2d, dropout, embedding, "
              "flatten, "
              "global_avg_pool, "
              "global_max_pool, gru, "
              "layer_norm, linear, lstm, max_pool1d") != NULL);
    CHECK(strstr(pg_last_error(),
                 "multihead_attention, normalization, pad1d, pad2d, rnn, upsample1d, upsample2d; "
                 "register custom ones with ag_register_layer)") != NULL);
    pg_clear_error();
    /* pooling (issue 30): a number or a pair, stride null (the kernel), padding 0 */
    CHECK(cfg("{\"type\": \"max_pool2d\", \"kernel_size\": 2}") > 0 &&
          !strcmp(out, "{\"kernel_size\": [2, 2], \"stride\": null, \"padding\": [0, 0]}"));
    CHECK(cfg("{\"type\": \"avg_pool2d\", \"kernel_size\": [3, 2], \"stride\": [1, 2.0], "
              "\"padding\": [1, 0]}") > 0 &&
          !strcmp(out, "{\"kernel_size\": [3, 2], \"stride\": [1, 2], \"padding\": [1, 0]}"));
    CHECK(cfg("{\"type\": \"max_pool1d\", \"kernel_size\": [3], \"padding\": 1}") > 0 &&
          !strcmp(out, "{\"kernel_size\": 3, \"stride\": null, \"padding\": 1}"));
    CHECK(cfg("{\"type\": \"flatten\"}") == 2 && !strcmp(out, "{}"));
    /* padding and upsampling: padding 1, 2 or 4 numbers (pad1d: 1 or 2), never 3 */
    CHECK(cfg("{\"type\": \"pad2d\", \"padding\": [1, 2, 0, 3]}") > 0 &&
          !strcmp(out, "{\"padding\": [1, 2, 0, 3], \"value\": 0, \"mode\": \"constant\"}"));
    CHECK(cfg("{\"type\": \"pad1d\", \"padding\": 2, \"mode\": \"reflect\"}") > 0 &&
          !strcmp(out, "{\"padding\": 2, \"value\": 0, \"mode\": \"reflect\"}"));
    CHECK(cfg("{\"type\": \"upsample2d\", \"scale_factor\": 2}") > 0 &&
          !strcmp(out, "{\"scale_factor\": [2, 2], \"mode\": \"nearest\"}"));
    /* negative pads crop (torch's F.pad) */
    CHECK(cfg("{\"type\": \"pad2d\", \"padding\": [-1, 2, 0, -3]}") > 0 &&
          !strcmp(out, "{\"padding\": [-1, 2, 0, -3], \"value\": 0, \"mode\": \"constant\"}"));
    REFUSED("{\"type\": \"pad2d\", \"padding\": [1, 1, 1]}",
            "bad arguments for a 'pad2d' layer: padding must be a whole number or a list of "
            "1, 2 or 4, got [1, 1, 1]");
    REFUSED("{\"type\": \"pad1d\", \"padding\": [1, 1, 1, 1]}",
            "padding must be a whole number or a list of 1 or 2, got [1, 1, 1, 1]");
    REFUSED("{\"type\": \"pad1d\", \"padding\": [1, -0.5]}",
            "padding must be a whole number or a list of 1 or 2, got [1, -0.5]");
    REFUSED("{\"type\": \"upsample2d\", \"scale_factor\": 2, \"mode\": \"area\"}",
            "mode must be one of \"nearest\" or \"bilinear\", got \"area\"");
    CHECK(cfg("{\"type\": \"global_max_pool\"}") == 2);
    REFUSED("{\"type\": \"max_pool2d\", \"kernel_size\": 2, \"padding\": 2}",
            "bad arguments for a 'max_pool2d' layer: padding [2, 2] must be at most half of "
            "kernel_size [2, 2]");
    REFUSED("{\"type\": \"avg_pool1d\", \"kernel_size\": 2.5}",
            "bad arguments for a 'avg_pool1d' layer: kernel_size must be a whole number >= 1, got "
            "2.5");
    REFUSED("{\"type\": \"avg_pool2d\", \"kernel_size\": [2, 2, 2]}",
            "kernel_size must be a whole number >= 1 or a pair [H, W] of them, got [2, 2, 2]");
    REFUSED("{\"type\": \"max_pool2d\", \"kernel_size\": 2, \"stride\": 0}",
            "stride must be a whole number >= 1 or a pair [H, W] of them or null, got 0");
    REFUSED("{\"type\": \"flatten\", \"start_dim\": 1}",
            "bad arguments for a 'flatten' layer: unknown argument 'start_dim'");
    REFUSED("{\"layers\": []}",
            "ag_module_from_config: expected an object with a 'type' string, got {\"layers\": []}");
    REFUSED("[1, 2]", "expected an object with a 'type' string, got [1, 2]");
    REFUSED("{\"type\": \"sequential\", \"layers\": [], \"x\": 1}",
            "ag_module_from_config: a sequential config is {\"type\": \"sequential\", "
            "\"layers\": [...]}");
    REFUSED("{\"type\": \"sequential\", \"layers\": {}}", "a sequential config is");
    REFUSED("{\"type\": \"linear\", \"in_features\": 2}",
            "ag_module_from_config: bad arguments for a 'linear' layer: out_features is missing");
    REFUSED("{\"type\": \"linear\", \"in_features\": 2, \"out_features\": 2, \"bogus\": 1, "
            "\"x\": 2}",
            "ag_module_from_config: bad arguments for a 'linear' layer: unknown arguments "
            "'bogus', 'x'");
    REFUSED("{\"type\": \"dropout\", \"rate\": 0.1, \"p\": 1}",
            "bad arguments for a 'dropout' layer: unknown argument 'p'");
    REFUSED("{\"type\": \"linear\", \"in_features\": 2.5, \"out_features\": 2}",
            "bad arguments for a 'linear' layer: in_features must be a whole number in [1, "
            "2147483647], got 2.5");
    REFUSED("{\"type\": \"linear\", \"in_features\": \"a\", \"out_features\": 2}",
            "in_features must be a whole number in [1, 2147483647], got \"a\"");
    REFUSED("{\"type\": \"embedding\", \"vocab_size\": 1e12, \"dim\": 2}", "got 1000000000000");
    REFUSED("{\"type\": \"embedding\", \"vocab_size\": 0, \"dim\": 2}", "got 0");
    REFUSED("{\"type\": \"linear\", \"in_features\": 2, \"out_features\": 2, \"activation\": "
            "\"swish\"}",
            "activation must be one of \"gelu\", \"relu\", \"sigmoid\", \"softmax\", \"tanh\" or "
            "null, got \"swish\"");
    REFUSED("{\"type\": \"linear\", \"in_features\": 2, \"out_features\": 2, \"init\": null}",
            "init must be one of \"glorot_uniform\" or \"orthogonal\", got null");
    REFUSED("{\"type\": \"linear\", \"in_features\": 2, \"out_features\": 2, \"gain\": [1]}",
            "gain must be a finite number, got [1]");
    REFUSED("{\"type\": \"dropout\", \"rate\": 1}",
            "bad arguments for a 'dropout' layer: rate must be a number in [0, 1), got 1");
    REFUSED("{\"type\": \"dropout\"}", "rate is missing");
    REFUSED("{\"type\": \"batch_norm\", \"num_features\": 2, \"eps\": -1}",
            "eps must be a number >= 0, got -1");
    REFUSED("{\"type\": \"batch_norm\", \"num_features\": 2, \"momentum\": 1.5}",
            "momentum must be a number in [0, 1], got 1.5");
    REFUSED("{\"type\": \"layer_norm\", \"normalized_shape\": 2, \"elementwise_affine\": 1}",
            "bad arguments for a 'layer_norm' layer: elementwise_affine must be true or false, "
            "got 1");
    REFUSED("{\"type\": \"multihead_attention\", \"d_model\": 4, \"n_heads\": 3}",
            "bad arguments for a 'multihead_attention' layer: d_model (4) must be divisible by "
            "n_heads (3)");
    REFUSED("{\"type\": \"linear\", \"in_features\": 2, \"in_features\": 2}",
            "ag_module_from_config: the config is not valid JSON (");
    REFUSED("{\"type\": \"linear\"", "the config is not valid JSON");
    /* a type's name is quoted and cut, whatever it holds */
    REFUSED("{\"type\": \"it's\\n\"}", "unknown layer type 'it's\\n'");
    /* depth: the walk's bound, before the text is read */
    CHECK_ERR(pg_layer_config("{", 1, PG_CONFIG_MAX_DEPTH + 1, 0, out, sizeof out) < 0,
              PG_STATUS_ERR_VALUE,
              "ag_module_from_config: the config is nested deeper than 64 levels");
    CHECK(pg_layer_config(lin, (int64_t)strlen(lin), PG_CONFIG_MAX_DEPTH, 0, out, sizeof out) > 0);
    CHECK_ERR(pg_layer_config(NULL, 0, 0, 0, out, sizeof out) < 0, PG_STATUS_ERR_ARG,
              "bad arguments");
    /* "sequential", then the built-in types sorted, then NULL */
    int nt = 1, sorted = 1, seen = 0;
    for (; pg_layer_type_name(nt); nt++) {
        if (nt > 1) sorted &= strcmp(pg_layer_type_name(nt - 1), pg_layer_type_name(nt)) < 0;
        seen += !strcmp(pg_layer_type_name(nt), "multihead_attention") +
            !strcmp(pg_layer_type_name(nt), "max_pool2d") +
            !strcmp(pg_layer_type_name(nt), "conv1d");
    }
    CHECK(!strcmp(pg_layer_type_name(0), "sequential") && !pg_layer_type_name(-1) && sorted &&
          seen == 3 && nt >= 20);

    /* ag_register_layer's rules and the config API's refusals: one text for both languages */
    CHECK(pg_layer_register_check("my_layer", 1) == 0);
    CHECK_ERR(pg_layer_register_check(NULL, 1), PG_STATUS_ERR_ARG,
              "ag_register_layer: type must be a non-empty string");
    CHECK_ERR(pg_layer_register_check("", 0), PG_STATUS_ERR_ARG, "type must be a non-empty");
    CHECK_ERR(pg_layer_register_check("sequential", 1), PG_STATUS_ERR_VALUE,
              "ag_register_layer: 'sequential' is a built-in layer type");
    CHECK_ERR(pg_layer_register_check("my_layer", 0), PG_STATUS_ERR_ARG,
              "ag_register_layer: builder must be a function (cfg -> layer)");
    CHECK_ERR(pg_layer_arg_fail(PG_LAYER_BAD_BUILT, "my_layer", "int"), PG_STATUS_ERR_ARG,
              "ag_module_from_config: the builder registered for 'my_layer' returned a int, not a "
              "layer with forward()");
    CHECK_ERR(pg_layer_arg_fail(PG_LAYER_BAD_NO_CONFIG, NULL, "numeric"), PG_STATUS_ERR_ARG,
              "ag_to_config: the model has no to_config() (got numeric)");
}
