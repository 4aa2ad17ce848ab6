# Abstract expressions and their Z3 oracle (the search's pruning test), kept as a library of
# its own so that it builds independently of the interpreter. Included from CMakeLists.txt.
add_library(mugraph_absexpr
  ${CMAKE_CURRENT_LIST_DIR}/abstract_expr.cpp
  ${CMAKE_CURRENT_LIST_DIR}/axioms.cpp
  ${CMAKE_CURRENT_LIST_DIR}/abstract_expr_oracle.cpp
)
target_include_directories(mugraph_absexpr PUBLIC ${PROJECT_SOURCE_DIR} ${Z3_INCLUDE_DIR})
target_link_libraries(mugraph_absexpr PUBLIC mugraph_graph ${Z3_LIBRARY} TBB::tbb)
