int printf(const char *format, ...);

/* Sorting and searching over int arrays, with the comparison passed as a function pointer. */
static int compare_ints(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int compare_ints_desc(const void *a, const void *b)
{
    return compare_ints(b, a);
}

static void swap(int *a, int *b)
{
    int t = *a;
    *a = *b;
    *b = t;
}

void insertion_sort(int *v, int n, int (*cmp)(const void *, const void *))
{
    for (int i = 1; i < n; i++) {
        int key = v[i], j = i - 1;
        while (j >= 0 && cmp(&v[j], &key) > 0) {
            v[j + 1] = v[j];
            j--;
        }
        v[j + 1] = key;
    }
}

void quick_sort(int v[], int lo, int hi, int (*cmp)(const void *, const void *))
{
    int i, last;
    if (lo >= hi)
        return;
    if (hi - lo < 8) {
        insertion_sort(v + lo, hi - lo + 1, cmp);
        return;
    }
    swap(&v[lo], &v[lo + ((hi - lo) >> 1)]);
    last = lo;
    for (i = lo + 1; i <= hi; i++)
        if ((*cmp)(&v[i], &v[lo]) < 0)
            swap(&v[++last], &v[i]);
    swap(&v[lo], &v[last]);
    quick_sort(v, lo, last - 1, cmp);
    quick_sort(v, last + 1, hi, cmp);
}

int binary_search(const int *v, int n, int key)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (v[mid] < key)
            lo = mid + 1;
        else if (v[mid] > key)
            hi = mid - 1;
        else
            return mid;
    }
    return -(lo + 1);
}

static unsigned int next_random(unsigned int *state)
{
    unsigned int x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}

int is_sorted(const int *v, int n, int (*cmp)(const void *, const void *))
{
    int i;
    for (i = 1; i < n; ++i)
        if (cmp(v + i - 1, v + i) > 0)
            return 0;
    return 1;
}

int main(void)
{
    int small[] = { 5, 3, 9, 1, 7, };
    int big[100];
    unsigned int seed = 2463534242u;
    int n = sizeof big / sizeof *big, i, failures = 0;

    for (i = 0; i < n; i++)
        big[i] = (int)(next_random(&seed) % 1000u);
    quick_sort(big, 0, n - 1, compare_ints);
    failures += !is_sorted(big, n, compare_ints);
    insertion_sort(small, 5, compare_ints_desc);
    failures += !is_sorted(small, 5, &compare_ints_desc);
    for (i = 0; i < 5; i++)
        printf("%d%c", small[i], i == 4 ? '\n' : ' ');
    i = binary_search(big, n, big[42]);
    printf("found %d at %d, missing -> %d\n", big[42], i, binary_search(big, n, 1000));
    return failures != 0;
}