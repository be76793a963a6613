#include "inline_tp.h"

void FromA() {
  InlineEmit(1);
  TemplateEmit<int>(10);
  TemplateEmit<double>(2.5);
}
