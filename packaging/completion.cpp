// The bash completion script, from the parsed help: tables of every command's subcommands,
// options, option values and positionals, and one function that reads them.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "packaging/help_model.h"

namespace toysim::help {

namespace {

std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
}

bool mentions(const std::string& text, const std::string& word) { return lower(text).find(word) != std::string::npos; }

// What the word after an option is: its choices, "@file", "@exercise", or "@text" (a number, a
// setting: nothing to offer, but the word is the option's and not a positional).
std::string value_kind(const Item& option) {
    if (!option.choices.empty()) {
        std::string out;
        for (const auto& choice : option.choices) out += (out.empty() ? "" : " ") + choice;
        return out;
    }
    if (std::find(option.names.begin(), option.names.end(), "--exercise") != option.names.end()) return "@exercise";
    if (mentions(option.text, "file")) return "@file";
    return "@text";
}

// What a positional is: "exercise" (a name under the exercises folder, or a folder), "dir", "toy"
// (a .toy program) or "file"; "..." when it takes every word after it.
std::string positional_kind(const Item& positional) {
    const std::string& name = positional.names.at(0);
    std::string kind = name == "exercise" || mentions(positional.text, "exercise's name") ? "exercise"
                       : name == "dir" || mentions(positional.text, "folder")         ? "dir"
                       : mentions(positional.text, ".toy")                             ? "toy"
                                                                                       : "file";
    return kind + (positional.repeated ? "..." : "");
}

struct Tables {
    std::map<std::string, std::string> commands, options, values, positionals;
};

void add(Tables& tables, const Help& help) {
    const std::string key = command_words(help.path);  // bash refuses an empty key
    std::string commands, options, positionals;
    for (const auto& sub : help.subcommands) commands += (commands.empty() ? "" : " ") + sub.names.at(0);
    for (const auto& option : help.options)
        for (const auto& name : option.names) {
            options += (options.empty() ? "" : " ") + name;
            if (!option.type.empty()) tables.values[key + "|" + name] = value_kind(option);
        }
    for (const auto& positional : help.positionals) positionals.append(positionals.empty() ? "" : " ").append(positional_kind(positional));
    tables.commands[key] = commands;
    tables.options[key] = options;
    tables.positionals[key] = positionals;
    for (const auto& child : help.children) add(tables, child);
}

std::string quoted(const std::string& text) {
    std::string out = "'";
    for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string assoc(const std::string& name, const std::map<std::string, std::string>& table) {
    std::string out = "    local -A " + name + "=(\n";
    for (const auto& [key, value] : table) out += "        [" + quoted(key) + "]=" + quoted(value) + "\n";
    return out + "    )\n";
}

// The script's fixed part: %TABLES% is where the tables go.
constexpr const char* kScript = R"bash(# bash completion for toysim: its commands, their options, option values, .toy files and
# exercise names. Generated from toysim's --help by packaging/help_docs.cpp at build time: do not
# edit. Works with or without the bash-completion package.

# The exercises `toysim exercise list` finds ($1: the toysim being completed).
_toysim_exercises() {
    local toysim=$1
    [[ $toysim == "~"* ]] && toysim=$HOME${toysim#"~"}
    "$toysim" exercise list --format csv 2>/dev/null | tail -n +2 | cut -d, -f1
}

# Adds the files that may follow, $1 being toy (.toy programs and folders), dir or file.
_toysim_files() {
    local IFS=$'\n'
    compopt -o filenames 2>/dev/null  # (fails harmlessly outside a completion, as in a test)
    case $1 in
        toy) COMPREPLY+=($(compgen -f -X '!*.toy' -- "$cur") $(compgen -d -- "$cur")) ;;
        dir) COMPREPLY+=($(compgen -d -- "$cur")) ;;
        *) COMPREPLY+=($(compgen -f -- "$cur")) ;;
    esac
}

# Adds what may be typed where $1 (exercise, dir, toy, file, an option's choices, @text) goes.
_toysim_add() {
    case $1 in
        exercise | @exercise)
            COMPREPLY+=($(compgen -W "$(_toysim_exercises "${COMP_WORDS[0]}")" -- "$cur"))
            _toysim_files dir ;;
        toy | dir | file) _toysim_files "$1" ;;
        @file) _toysim_files file ;;
        @* | none | '') ;;
        *) COMPREPLY+=($(compgen -W "$1" -- "$cur")) ;;
    esac
}

_toysim() {
    local cur=${COMP_WORDS[COMP_CWORD]} path=toysim word opt= expect= prefix= i npos=0
    COMPREPLY=()
    # Keys: a command's words ("toysim gpu run"); values: "COMMAND|OPTION".
%TABLES%
    # Which command the words so far name, how many positionals they hold, and whether the word
    # being completed is an option's value (bash splits --format=json at '=').
    for ((i = 1; i < COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        [[ $word == = ]] && continue
        if [[ -n $expect ]]; then
            expect=
        elif [[ $word == -?* ]]; then
            opt=${word%%=*}
            [[ $word != *=* && -n ${values["$path|$opt"]+set} ]] && expect=1
        elif ((npos == 0)) && [[ " ${commands[$path]} " == *" $word "* ]]; then
            path="$path $word"
        else
            npos=$((npos + 1))
        fi
    done
    if [[ $cur == = ]]; then
        cur=
    elif [[ $cur == -?*=* ]]; then  # --format=js, when '=' is not a word break
        opt=${cur%%=*} prefix=${cur%%=*}= cur=${cur#*=}
        expect=${values["$path|$opt"]+1}
    fi
    if [[ -n $expect ]]; then
        _toysim_add "${values["$path|$opt"]}"
        [[ -n $prefix ]] && COMPREPLY=("${COMPREPLY[@]/#/$prefix}")
    elif [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "${options[$path]}" -- "$cur"))
    elif [[ -n ${commands[$path]} ]]; then
        ((npos == 0)) && COMPREPLY=($(compgen -W "${commands[$path]}" -- "$cur"))
    else
        local -a kinds=(${positionals[$path]})
        local kind=none
        if ((npos < ${#kinds[@]})); then
            kind=${kinds[npos]}
        elif ((${#kinds[@]})) && [[ ${kinds[-1]} == *... ]]; then
            kind=${kinds[-1]}
        fi
        _toysim_add "${kind%...}"
    fi
    return 0
}
complete -F _toysim toysim
)bash";

}  // namespace

std::string bash_completion(const Help& top) {
    Tables tables;
    add(tables, top);
    std::string script = kScript;
    const std::string tables_text = assoc("commands", tables.commands) + assoc("options", tables.options) + assoc("values", tables.values) +
                                    assoc("positionals", tables.positionals);
    script.replace(script.find("%TABLES%\n"), 9, tables_text);
    return script;
}

}  // namespace toysim::help
