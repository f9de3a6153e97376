void *malloc(unsigned long size);
void free(void *ptr);
int printf(const char *format, ...);

/* A singly linked list of integers: push, append, reverse, remove, sum. */
struct node {
    int value;
    struct node *next;
};

struct list {
    struct node *head;
    unsigned long length;
};

static struct node *node_new(int value, struct node *next)
{
    struct node *n = (struct node *)malloc(sizeof(struct node));
    if (n == 0)
        return 0;
    n->value = value;
    n->next = next;
    return n;
}

int list_push(struct list *l, int value)
{
    struct node *n = node_new(value, l->head);
    if (!n)
        return -1;
    l->head = n;
    l->length++;
    return 0;
}

int list_append(struct list *l, int value)
{
    struct node **p = &l->head;
    while (*p != 0)
        p = &(*p)->next;
    *p = node_new(value, 0);
    if (*p == 0)
        return -1;
    ++l->length;
    return 0;
}

void list_reverse(struct list *l)
{
    struct node *prev = 0, *cur = l->head, *next;
    while (cur) {
        next = cur->next;
        cur->next = prev;
        prev = cur;
        cur = next;
    }
    l->head = prev;
}

/* Removes every node whose value equals `value`; returns how many were removed. */
int list_remove_all(struct list *l, int value)
{
    int removed = 0;
    struct node **p = &l->head;
    while (*p) {
        if ((*p)->value == value) {
            struct node *dead = *p;
            *p = dead->next;
            free(dead);
            removed += 1;
            l->length--;
        } else {
            p = &(*p)->next;
        }
    }
    return removed;
}

long list_sum(const struct list *l)
{
    long sum = 0;
    const struct node *n;
    for (n = l->head; n != 0; n = n->next)
        sum += n->value;
    return sum;
}

void list_print(const struct list *l)
{
    const struct node *n = l->head;
    printf("[");
    for (; n; n = n->next)
        printf(n->next ? "%d, " : "%d", n->value);
    printf("] (%lu items)\n", l->length);
}

void list_free(struct list *l)
{
    struct node *n = l->head;
    while (n != 0) {
        struct node *next = n->next;
        free(n);
        n = next;
    }
    l->head = 0;
    l->length = 0;
}

int main(void)
{
    struct list l = { 0, 0 };
    int i;
    for (i = 0; i < 10; i++) {
        if (i % 3 == 0)
            list_append(&l, i);
        else
            list_push(&l, i * i);
    }
    list_print(&l);
    list_reverse(&l);
    list_print(&l);
    printf("removed %d, sum %ld\n", list_remove_all(&l, 9), list_sum(&l));
    list_free(&l);
    return 0;
}