/* header */
int x;