-- coord.acquire_permit + coord.release_permit, every client on one semaphore of 4 permits (never full at 4 clients)
SELECT coord.acquire_permit('/bsem-shared', 4);
SELECT coord.release_permit('/bsem-shared');
