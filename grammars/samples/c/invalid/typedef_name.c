typedef struct node node;
node *head;