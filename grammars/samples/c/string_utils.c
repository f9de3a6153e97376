int printf(const char *format, ...);

/* Small string utilities written without the C library. */
unsigned long str_length(const char *s)
{
    const char *p = s;
    while (*p)
        p++;
    return (unsigned long)(p - s);
}

char *str_copy(char *dst, const char *src)
{
    char *d = dst;
    while ((*d++ = *src++) != '\0')
        ;
    return dst;
}

int str_compare(const char *a, const char *b)
{
    for (; *a && *a == *b; a++, b++)
        continue;
    return (unsigned char)*a - (unsigned char)*b;
}

static int is_space(int c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int to_upper(int c)
{
    return c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c;
}

void str_reverse(char *s)
{
    unsigned long i = 0, j = str_length(s);
    if (j == 0)
        return;
    for (j--; i < j; i++, j--) {
        char t = s[i];
        s[i] = s[j];
        s[j] = t;
    }
}

int count_words(const char *s)
{
    int words = 0, in_word = 0;
    do {
        if (*s == '\0' || is_space(*s)) {
            in_word = 0;
        } else if (!in_word) {
            in_word = 1;
            ++words;
        }
    } while (*s++);
    return words;
}

/* Parses an optionally signed decimal, hex (0x) or octal (0) integer. */
long parse_long(const char *s, int *ok)
{
    long value = 0;
    int base = 10, sign = 1, digits = 0;
    while (is_space(*s))
        s++;
    switch (*s) {
    case '-':
        sign = -1;
        /* fall through */
    case '+':
        s++;
        break;
    default:
        break;
    }
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    } else if (s[0] == '0') {
        base = 8;
    }
    for (;; s++) {
        int c = to_upper(*s), d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            break;
        if (d >= base)
            break;
        value = value * base + d;
        digits++;
    }
    *ok = digits > 0 && *s == '\0';
    return sign * value;
}

int main(void)
{
    char buf[64];
    const char *inputs[] = { "42", "  -0x1F", "0755", "12ab", "" };
    int i, ok;
    str_copy(buf, "Hello, \"world\"!\n");
    str_reverse(buf);
    printf("%s|%lu|%d\n", buf, str_length(buf), count_words("a few  words\there"));
    for (i = 0; i < (int)(sizeof inputs / sizeof inputs[0]); ++i) {
        long v = parse_long(inputs[i], &ok);
        printf("%-8s -> %ld (%s)\n", inputs[i], v, ok ? "ok" : "invalid");
    }
    return str_compare("abc", "abd") < 0 ? 0 : 1;
}