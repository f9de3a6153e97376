int printf(const char *format, ...);

/* A tiny tokenizer for arithmetic: enums, unions, switch, goto, designated initializers. */
enum token_kind { TOK_END, TOK_NUMBER, TOK_IDENT, TOK_OP, TOK_ERROR = -1 };

struct token {
    enum token_kind kind;
    union {
        long number;
        char op;
        struct { const char *start; int length; } ident;
    } as;
};

struct lexer {
    const char *src;
    int pos;
    unsigned int line : 16, column : 16;
};

static const char *const kind_names[] = {
    [TOK_END] = "end",
    [TOK_NUMBER] = "number",
    [TOK_IDENT] = "ident",
    [TOK_OP] = "op",
};

static int is_alpha(char c) { return ((c | 32) >= 'a' && (c | 32) <= 'z') || c == '_'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

struct token next_token(struct lexer *lx)
{
    struct token t = { .kind = TOK_ERROR };
    char c;
again:
    c = lx->src[lx->pos];
    switch (c) {
    case '\n':
        lx->line++;
        lx->column = 0;
        /* fall through */
    case ' ': case '\t':
        lx->pos++;
        goto again;
    case '\0':
        t.kind = TOK_END;
        break;
    case '+': case '-': case '*': case '/': case '(': case ')':
        t.kind = TOK_OP;
        t.as.op = c;
        lx->pos++;
        break;
    default:
        if (is_digit(c)) {
            long v = 0;
            while (is_digit(lx->src[lx->pos]))
                v = v * 10 + (lx->src[lx->pos++] - '0');
            t.kind = TOK_NUMBER;
            t.as.number = v;
        } else if (is_alpha(c)) {
            int start = lx->pos;
            while (is_alpha(lx->src[lx->pos]) || is_digit(lx->src[lx->pos]))
                lx->pos++;
            t.kind = TOK_IDENT;
            t.as.ident.start = lx->src + start;
            t.as.ident.length = lx->pos - start;
        } else
            lx->pos++;
    }
    lx->column += 1;
    return t;
}

int main(void)
{
    struct lexer lx = { "width * (height + 12)\n- 3 / depth $", 0, 1, 0 };
    struct token t;
    int counts[4] = { 0 }, errors = 0;
    do {
        t = next_token(&lx);
        if (t.kind == TOK_ERROR)
            errors++;
        /* A dangling else: it belongs to the inner if (the grammar keeps both readings). */
        if (t.kind != TOK_ERROR)
            if (t.kind == TOK_IDENT)
                printf("%s %.*s\n", kind_names[t.kind], t.as.ident.length, t.as.ident.start);
            else
                printf("%s\n", kind_names[t.kind]);
        if (t.kind != TOK_ERROR)
            counts[t.kind] += 1;
    } while (t.kind != TOK_END);
    printf("%d numbers, %d identifiers, %d operators, %d errors\n",
           counts[TOK_NUMBER], counts[TOK_IDENT], counts[TOK_OP], errors);
    return errors > 1 ? 1 : ((struct token){ .kind = TOK_END }).kind;
}