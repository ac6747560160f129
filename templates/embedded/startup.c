/* Minimal Cortex-M start-up for skinflint's bare-metal examples.
 * The vector table holds the initial stack pointer and the reset handler;
 * the reset handler copies .data, zeroes .bss, enables the FPU on cores that
 * have one, opens semihosting (newlib rdimon) and runs main().  Plain C
 * needs no constructors, so __libc_init_array is not called. */
#include <stdint.h>
#include <stdlib.h>

extern uint32_t __stack_top, __data_load, __data_start, __data_end, __bss_start__, __bss_end__;
extern int main(void);
extern void initialise_monitor_handles(void);

void Reset_Handler(void);
void Default_Handler(void);
void _init(void);
void _fini(void);

__attribute__((section(".vectors"), used))
const void *const vector_table[16] = {
    &__stack_top, (const void *)Reset_Handler,
    (const void *)Default_Handler, (const void *)Default_Handler,  /* NMI, HardFault */
    (const void *)Default_Handler, (const void *)Default_Handler,
    (const void *)Default_Handler, 0, 0, 0, 0,
    (const void *)Default_Handler, (const void *)Default_Handler, 0,
    (const void *)Default_Handler, (const void *)Default_Handler,
};

void Reset_Handler(void) {
    uint32_t *src = &__data_load, *dst = &__data_start;
    while (dst < &__data_end) *dst++ = *src++;
    for (dst = &__bss_start__; dst < &__bss_end__;) *dst++ = 0u;
#if defined(__ARM_FP)
    /* CPACR: full access to coprocessors 10 and 11 (the FPU) */
    *(volatile uint32_t *)0xE000ED88u |= (0xFu << 20);
    __asm__ volatile("dsb\n\tisb");
#endif
    initialise_monitor_handles();
    exit(main());
}

/* exit() runs newlib's fini array, which calls these; crti/crtn are not linked. */
void _init(void) {}
void _fini(void) {}

void Default_Handler(void) {
    exit(99);
}
